"""aspen_torch: Aspen's LSTM and GRU as drop-in replacements for torch.nn.LSTM and torch.nn.GRU.

    import aspen_torch
    lstm = aspen_torch.LSTM(input_size=32, hidden_size=64, num_layers=2, batch_first=True)
    lstm.load_state_dict(torch_lstm.state_dict())    # the same parameter names and shapes
    output, (h_n, c_n) = lstm(x)                      # autograd through Aspen's backward

Backend(device, max_layers) is Aspen's layer backend (aspen/backend.h); cache_stats() reports
its compiled-layer cache.
"""
from ._backend import Backend
from ._layers import GRU, LSTM, default_backend

__all__ = ["LSTM", "GRU", "Backend", "default_backend"]
