"""aspen_torch: Aspen's LSTM, GRU, RNN, Conv2d, MaxPool2d, AvgPool2d and BatchNorm2d as drop-in
replacements for torch.nn's.

    import aspen_torch
    lstm = aspen_torch.LSTM(input_size=32, hidden_size=64, num_layers=2, batch_first=True)
    lstm.load_state_dict(torch_lstm.state_dict())    # the same parameter names and shapes
    output, (h_n, c_n) = lstm(x)                      # autograd through Aspen's backward
    conv = aspen_torch.Conv2d(3, 16, 3, padding=1)     # torch.nn.Conv2d's arguments

Backend(device, max_layers) is Aspen's layer backend (aspen/backend.h); cache_stats() reports
its compiled-layer cache.
"""
from ._backend import Backend
from ._cnn import AvgPool2d, BatchNorm2d, Conv2d, MaxPool2d
from ._layers import GRU, LSTM, RNN, default_backend

__all__ = ["LSTM", "GRU", "RNN", "Conv2d", "MaxPool2d", "AvgPool2d", "BatchNorm2d", "Backend",
           "default_backend"]
