"""aspen_torch.LSTM, GRU and RNN: torch.nn.LSTM, torch.nn.GRU and torch.nn.RNN computed by Aspen.

The modules have torch's constructor arguments, parameter names, shapes and initialisation, so
a state_dict loads into either module and the same seed gives the same weights. A stack (more
than one layer, or bidirectional) is one autograd Function over one call of Aspen's backend
(aspen/backend.h's aspen_rnn_stack_*: one engine, which runs a small batch's layers as a
wavefront and a layer's two directions together); in training with dropout, each layer and
direction is one Function over the single-layer calls, with torch's dropout between layers, so
that a seed gives torch.nn's masks (one_call = False runs every stack that way). The forward
saves Aspen's reserve, the backward runs Aspen's backward and weight update. The parameters go
to the backend in torch's own layouts (ASPEN_WEIGHTS_PYTORCH: the backend converts them while
writing the layer's inputs, and the gradients back), so a call runs no torch operation on the
weights: nothing to keep in sync with in-place updates, and no torch thread pool spinning on the
cores Aspen's executor is about to use.

Runs on CPU tensors (Aspen's CPU executor) and CUDA tensors (Aspen's GPU device, ordered with
torch's current stream), float32 or float16 (which torch.nn.LSTM does not run on the CPU).
bidirectional=True runs each layer's reverse direction as an Aspen layer with the option
direction "reverse" (each row from its own last step, as torch runs a packed sequence), and
concatenates the two outputs per step as torch does. proj_size > 0 (LSTM) gives each layer
Aspen's projection (option projSize; weight_hr_l<k> goes to the backend after weight_hh_l<k>
in one buffer). Not supported (a clear error): other dtypes or devices.
"""
import json
import math

import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from . import _backend

_default_backends = {}
_DTYPES = {torch.float32: "float32", torch.float16: "float16"}


def default_backend(device=None):
    """The process's backend for a torch device, made on first use: the CPU executor ("cpu")
    for CPU tensors, Aspen's GPU device ("gpu:N") for tensors on cuda:N. The CPU backend runs
    Aspen's work on torch's intra-op OpenMP threads (torch.get_num_threads() of them), so that
    the two do not compete for the cores; default_backend().use_openmp(False) gives Aspen's
    engines their own threads again."""
    if isinstance(device, torch.device) and device.type == "cpu" and "cpu" in _default_backends:
        return _default_backends["cpu"]  # the common case, without making a torch.device
    device = torch.device(device or "cpu")
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        name = f"gpu:{index}"
    elif device.type == "cpu":
        name = "cpu"
    else:
        raise NotImplementedError(f"aspen_torch: device {device} is not supported (cpu, cuda)")
    if name not in _default_backends:
        backend = _backend.Backend(name, 64)
        if name == "cpu":  # Aspen's CPU work on torch's intra-op threads (see use_openmp)
            backend.use_openmp(True)
        _default_backends[name] = backend
    return _default_backends[name]


def _stream(x):
    """The cudaStream_t of torch's current stream on x's device (0 for a CPU tensor)."""
    return torch.cuda.current_stream(x.device).cuda_stream if x.is_cuda else 0


def _ptr(t):
    return 0 if t is None else t.data_ptr()


class _RnnLayerFunction(torch.autograd.Function):
    """One layer over a time-major batch: y [T,B,W], hn [B,W] and, for an LSTM, cn [B,H], from
    x [T,B,I], h0 [B,W], c0 (None for a GRU), lengths (int32 [B] or None) and torch's parameters
    (biases None without bias; w_hr None without a projection; W = proj_size or H).
    Every gradient returned is a tensor of its own: autograd may keep an incoming gradient as a
    parameter's .grad, so two parameters must never share one."""

    @staticmethod
    def forward(ctx, backend, desc, lengths, training, x, h0, c0, w_ih, w_hh, b_ih, b_hh,
                w_hr):
        # training: gradients will be asked for (decided by the caller: grad mode is off here).
        # The backend takes torch's layouts (desc's weights_layout "pytorch"): the parameters
        # go in as they are, the two biases as one [2, G*H] (zeros without bias), weight_hr
        # after weight_hh in one buffer.
        lstm = c0 is not None
        T, B, _ = x.shape
        W = h0.shape[-1]
        has_bias = b_ih is not None
        w_ih, w_hh, b = _backend_weights(x, w_ih, w_hh, b_ih, b_hh, w_hr)
        y = x.new_empty((T, B, W))
        hn = x.new_empty((B, W))
        cn = x.new_empty(c0.shape) if lstm else None
        reserve = None
        if training:
            reserve = torch.empty(backend.reserve_bytes(desc), dtype=torch.uint8,
                                  device=x.device)
        backend.forward(desc, _ptr(x), _ptr(h0), _ptr(c0), _ptr(w_ih), _ptr(w_hh), _ptr(b),
                        _ptr(lengths), _ptr(y), _ptr(hn), _ptr(cn), _ptr(reserve), _stream(x))
        ctx.backend, ctx.desc, ctx.lstm, ctx.has_bias = backend, desc, lstm, has_bias
        ctx.hr_shape = None if w_hr is None else tuple(w_hr.shape)  # [P, H]
        ctx.save_for_backward(lengths, x, h0, c0, w_ih, w_hh, b, y, reserve)
        return (y, hn, cn) if lstm else (y, hn)

    @staticmethod
    def backward(ctx, dy, dhn, dcn=None):
        lengths, x, h0, c0, w_ih, w_hh, b, y, reserve = ctx.saved_tensors
        if reserve is None:
            raise RuntimeError("aspen_torch: backward of a forward that ran without gradients")
        contiguous = lambda g: None if g is None else g.contiguous()
        dy, dhn, dcn = contiguous(dy), contiguous(dhn), contiguous(dcn)
        dx = torch.empty_like(x) if ctx.needs_input_grad[4] else None
        dh0 = torch.empty_like(h0)
        dc0 = torch.empty_like(c0) if ctx.lstm else None
        need_weights = any(ctx.needs_input_grad[7:12])
        dw_ih = torch.empty_like(w_ih) if need_weights else None
        dw_hh = torch.empty_like(w_hh) if need_weights else None
        db = torch.empty_like(b) if need_weights else None
        ctx.backend.backward(ctx.desc, _ptr(x), _ptr(h0), _ptr(c0), _ptr(w_ih), _ptr(w_hh),
                             _ptr(b), _ptr(lengths), _ptr(y), _ptr(reserve), _ptr(dy),
                             _ptr(dhn), _ptr(dcn), _ptr(dx), _ptr(dh0), _ptr(dc0), _ptr(dw_ih),
                             _ptr(dw_hh), _ptr(db), _stream(x))
        return (None, None, None, None, dx, dh0, dc0,
                *_torch_gradients(dw_ih, dw_hh, db, ctx.has_bias, ctx.hr_shape))


def _backend_weights(x, w_ih, w_hh, b_ih, b_hh, w_hr):
    """One layer's parameters as the backend takes them in torch's layouts: weight_ih, weight_hh
    (with weight_hr after it in one buffer) and the two biases as one [2, G*H] (zeros without
    bias)."""
    w_ih = w_ih.contiguous()
    w_hh = w_hh.contiguous() if w_hr is None else torch.cat((w_hh.reshape(-1), w_hr.reshape(-1)))
    b = x.new_zeros((2, w_ih.shape[0])) if b_ih is None else torch.stack((b_ih, b_hh))
    return w_ih, w_hh, b


def _torch_gradients(dw_ih, dw_hh, db, has_bias, hr_shape):
    """The gradients of one layer's parameters from the backend's (as _backend_weights laid them
    out): dw_ih, dw_hh, db_ih, db_hh, dw_hr, each a tensor of its own."""
    db_ih = db_hh = dw_hr = None
    if db is not None and has_bias:  # rows of their own: never one tensor for both
        db_ih, db_hh = db[0].clone(), db[1].clone()
    if dw_hh is not None and hr_shape is not None:  # weight_hh's [G*H, P], weight_hr's
        P, H = hr_shape
        n = dw_hh.numel() - P * H
        dw_hh, dw_hr = dw_hh[:n].view(n // P, P).clone(), dw_hh[n:].view(P, H).clone()
    return dw_ih, dw_hh, db_ih, db_hh, dw_hr


class _RnnStackFunction(torch.autograd.Function):
    """The whole stack in one backend call (aspen_rnn_stack_*: the library schedules it, a
    wavefront of fused LSTM layers, both directions of a layer in one compute set): y [T,B,D*W],
    hn [L*D,B,W] and, for an LSTM, cn [L*D,B,H], from x [T,B,I], h0 [L*D,B,W], c0 (None for a
    GRU), lengths and the parameters of each layer and direction in torch's order, five an
    entry (weight_ih, weight_hh, bias_ih, bias_hh, weight_hr; None where absent). Without
    dropout only: aspen_torch keeps torch's dropout between layers."""

    @staticmethod
    def forward(ctx, backend, desc, D, lengths, training, x, h0, c0, *params):
        lstm = c0 is not None
        T, B, _ = x.shape
        n = len(params) // 5
        entries = [params[5 * i:5 * i + 5] for i in range(n)]
        weights = [_backend_weights(x, *e) for e in entries]
        W = h0.shape[-1]
        y = x.new_empty((T, B, D * W))
        hn = torch.empty_like(h0)
        cn = torch.empty_like(c0) if lstm else None
        reserve = None
        if training:
            reserve = torch.empty(backend.stack_reserve_bytes(desc), dtype=torch.uint8,
                                  device=x.device)
        backend.stack_forward(desc, _ptr(x), _ptr(h0), _ptr(c0), [_ptr(w[0]) for w in weights],
                              [_ptr(w[1]) for w in weights], [_ptr(w[2]) for w in weights],
                              _ptr(lengths), _ptr(y), _ptr(hn), _ptr(cn), _ptr(reserve),
                              _stream(x))
        ctx.backend, ctx.desc, ctx.lstm, ctx.n = backend, desc, lstm, n
        ctx.has_bias = entries[0][2] is not None
        ctx.hr_shape = None if entries[0][4] is None else tuple(entries[0][4].shape)
        flat = [t for w in weights for t in w]
        ctx.save_for_backward(lengths, x, h0, c0, y, reserve, *flat)
        return (y, hn, cn) if lstm else (y, hn)

    @staticmethod
    def backward(ctx, dy, dhn, dcn=None):
        lengths, x, h0, c0, y, reserve, *flat = ctx.saved_tensors
        if reserve is None:
            raise RuntimeError("aspen_torch: backward of a forward that ran without gradients")
        contiguous = lambda g: None if g is None else g.contiguous()
        dy, dhn, dcn = contiguous(dy), contiguous(dhn), contiguous(dcn)
        weights = [flat[3 * i:3 * i + 3] for i in range(ctx.n)]
        dx = torch.empty_like(x) if ctx.needs_input_grad[5] else None
        dh0 = torch.empty_like(h0)
        dc0 = torch.empty_like(c0) if ctx.lstm else None
        need_weights = any(ctx.needs_input_grad[8:])
        grads = [[torch.empty_like(t) for t in w] if need_weights else [None] * 3
                 for w in weights]
        ctx.backend.stack_backward(
            ctx.desc, _ptr(x), _ptr(h0), _ptr(c0), [_ptr(w[0]) for w in weights],
            [_ptr(w[1]) for w in weights], [_ptr(w[2]) for w in weights], _ptr(lengths), _ptr(y),
            _ptr(reserve), _ptr(dy), _ptr(dhn), _ptr(dcn), _ptr(dx), _ptr(dh0), _ptr(dc0),
            [_ptr(g[0]) for g in grads] if need_weights else [],
            [_ptr(g[1]) for g in grads] if need_weights else [],
            [_ptr(g[2]) for g in grads] if need_weights else [], _stream(x))
        out = []
        for g in grads:
            out.extend(_torch_gradients(*g, ctx.has_bias, ctx.hr_shape))
        return (None, None, None, None, None, dx, dh0, dc0, *out)


class _AspenRNNBase(torch.nn.Module):
    _cell = None        # "lstm", "gru", "rnn_tanh" or "rnn_relu"
    _gates = None       # 4, 3 or 1
    _cell_order = None  # torch's gate order in Aspen's names

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None,
                 backend=None, options=None):
        super().__init__()
        name = type(self).__name__
        if not isinstance(bidirectional, bool):
            raise ValueError(f"aspen_torch.{name}: bidirectional should be True or False, not "
                             f"{bidirectional!r}")
        if options is not None and "direction" in json.loads(options):
            raise ValueError(f"aspen_torch.{name}: options must not set direction (the module "
                             "sets it: bidirectional=True runs both)")
        if not isinstance(proj_size, int) or isinstance(proj_size, bool) or proj_size < 0:
            raise ValueError(f"aspen_torch.{name}: proj_size should be a positive integer or "
                             f"zero to disable projections, not {proj_size!r}")
        if proj_size and self._cell != "lstm":
            raise ValueError(f"aspen_torch.{name}: proj_size argument is only supported for "
                             "LSTM, not RNN or GRU")
        if proj_size and isinstance(hidden_size, int) and proj_size >= hidden_size:
            raise ValueError(f"aspen_torch.{name}: proj_size has to be smaller than "
                             f"hidden_size ({proj_size} >= {hidden_size})")
        if not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1 or \
                isinstance(dropout, bool):
            raise ValueError(f"aspen_torch.{name}: dropout should be a number in [0, 1], "
                             f"not {dropout!r}")
        for what, value in (("input_size", input_size), ("hidden_size", hidden_size),
                            ("num_layers", num_layers)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"aspen_torch.{name}: {what} must be a positive integer, "
                                 f"not {value!r}")
        if dtype not in (None, torch.float32, torch.float16):
            raise TypeError(f"aspen_torch.{name}: dtype {dtype} is not supported (float32, "
                            "float16)")
        dtype = dtype or torch.float32
        if device is not None and torch.device(device).type not in ("cpu", "cuda"):
            raise NotImplementedError(f"aspen_torch.{name}: device {device} is not supported "
                                      "(cpu, cuda)")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        self._backend = backend
        # A stack (num_layers > 1 or bidirectional) as one backend call where it applies
        # (_stack_in_one_call); False: layer by layer.
        self.one_call = True
        if options is not None and "projSize" in json.loads(options):
            raise ValueError(f"aspen_torch.{name}: options must not set projSize (the module "
                             "sets it from proj_size)")
        # The options of each direction: the caller's, with the projection and, for the
        # reverse direction, direction "reverse".
        base = dict(json.loads(options or "{}"))
        if proj_size:
            base["projSize"] = proj_size
        self._options = json.dumps(base) if base else None
        self._reverse_options = json.dumps(dict(base, direction="reverse"))
        G, H = self._gates, hidden_size
        W = proj_size or hidden_size  # the width of h
        D = 2 if bidirectional else 1
        kinds = {"dtype": dtype, "device": device}
        # Registered in torch.nn.LSTM's order, so the same seed gives the same values.
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else D * W
            for suffix in ("", "_reverse")[:D]:
                setattr(self, f"weight_ih_l{layer}{suffix}",
                        torch.nn.Parameter(torch.empty(G * H, layer_input, **kinds)))
                setattr(self, f"weight_hh_l{layer}{suffix}",
                        torch.nn.Parameter(torch.empty(G * H, W, **kinds)))
                if bias:
                    setattr(self, f"bias_ih_l{layer}{suffix}",
                            torch.nn.Parameter(torch.empty(G * H, **kinds)))
                    setattr(self, f"bias_hh_l{layer}{suffix}",
                            torch.nn.Parameter(torch.empty(G * H, **kinds)))
                if proj_size:
                    setattr(self, f"weight_hr_l{layer}{suffix}",
                            torch.nn.Parameter(torch.empty(proj_size, H, **kinds)))
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            torch.nn.init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self._cell == "rnn_relu":
            s += ", nonlinearity=relu"
        return s

    def _dtype(self):
        """The parameters' dtype ("float32" or "float16" for the backend)."""
        dtype = self.weight_ih_l0.dtype
        if dtype not in _DTYPES:
            raise TypeError(f"aspen_torch.{type(self).__name__}: parameters of dtype {dtype} "
                            "are not supported (float32, float16)")
        return dtype

    def _check_input(self, x):
        name = type(self).__name__
        dtype = self._dtype()
        if x.dtype != dtype:
            raise TypeError(f"aspen_torch.{name}: input must have the type {dtype} (the "
                            f"parameters'), got type {x.dtype}")
        if x.device != self.weight_ih_l0.device:
            raise RuntimeError(f"aspen_torch.{name}: input on {x.device}, parameters on "
                               f"{self.weight_ih_l0.device}: they must be on one device")
        if x.device.type not in ("cpu", "cuda"):
            raise NotImplementedError(f"aspen_torch.{name}: input on {x.device} is not "
                                      "supported (cpu, cuda)")
        if x.shape[-1] != self.input_size:
            raise ValueError(f"aspen_torch.{name}: input.size(-1) must be equal to input_size. "
                             f"Expected {self.input_size}, got {x.shape[-1]}")

    def forward(self, input, hx=None):
        lstm = self._cell == "lstm"
        packed = isinstance(input, PackedSequence)
        unbatched = False
        lengths = None
        if packed:
            x, lengths = pad_packed_sequence(input)  # [T,B,I], batch in the original order
            lengths = lengths.to(torch.int32).contiguous()
        else:
            x = input
            if x.dim() == 2:
                unbatched = True
                x = x.unsqueeze(1)
            elif x.dim() != 3:
                raise ValueError(f"aspen_torch.{type(self).__name__}: expected input with 2 or "
                                 f"3 dimensions, got {x.dim()}")
            elif self.batch_first:
                x = x.transpose(0, 1)
        self._check_input(x)
        x = x.contiguous()
        T, B, _ = x.shape
        H, D = self.hidden_size, 2 if self.bidirectional else 1
        W = self.proj_size or H  # the width of h
        L = self.num_layers * D  # initial and final states: one per layer and direction
        h0 = c0 = None
        if hx is not None:
            h0, c0 = hx if lstm else (hx, None)
            if unbatched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            for what, t, width in (("h0", h0, W), ("c0", c0, H)):
                if t is not None and tuple(t.shape) != (L, B, width):
                    raise RuntimeError(f"Expected hidden size {(L, B, width)}, got "
                                       f"{list(t.shape)}")
        if h0 is None:
            h0 = x.new_zeros((L, B, W))
        if lstm and c0 is None:
            c0 = x.new_zeros((L, B, H))

        backend = self._backend or default_backend(x.device)
        run = self._run_stack if self._stack_in_one_call() else self._run_layers
        output, h_n, c_n = run(backend, x, lengths, h0, c0)
        if packed:
            order = input.sorted_indices
            sorted_y = output if order is None else output.index_select(1, order)
            sorted_lengths = lengths.to(torch.int64)
            if order is not None:
                sorted_lengths = sorted_lengths.index_select(0, order)
            data = pack_padded_sequence(sorted_y, sorted_lengths.cpu(), enforce_sorted=True).data
            output = PackedSequence(data, input.batch_sizes, input.sorted_indices,
                                    input.unsorted_indices)
        elif unbatched:
            output = output.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if lstm else None
        elif self.batch_first:
            output = output.transpose(0, 1)
        return (output, (h_n, c_n)) if lstm else (output, h_n)


    def _stack_in_one_call(self):
        """Whether the stack runs as one backend call (aspen_rnn_stack_*): more than one layer
        or both directions, and no dropout applied (torch's dropout between layers keeps
        torch.nn's masks for a seed, so a training stack with dropout runs layer by layer).
        one_call = False always runs layer by layer."""
        dropping = self.dropout and self.training and self.num_layers > 1
        return self.one_call and (self.num_layers > 1 or self.bidirectional) and not dropping

    def _stack_parameters(self):
        """Every layer and direction's parameters, five an entry in _RnnStackFunction's order."""
        params = []
        for layer in range(self.num_layers):
            for suffix in ("", "_reverse")[:2 if self.bidirectional else 1]:
                names = f"l{layer}{suffix}"
                params += [getattr(self, f"weight_ih_{names}"),
                           getattr(self, f"weight_hh_{names}"),
                           getattr(self, f"bias_ih_{names}") if self.bias else None,
                           getattr(self, f"bias_hh_{names}") if self.bias else None,
                           getattr(self, f"weight_hr_{names}") if self.proj_size else None]
        return params

    def _run_stack(self, backend, x, lengths, h0, c0):
        """The stack in one backend call: (output, h_n, c_n) (c_n None for a GRU)."""
        lstm = c0 is not None
        T, B, I = x.shape
        D = 2 if self.bidirectional else 1
        layer = _backend.Desc(self._cell, _DTYPES[x.dtype], T, B, I, self.hidden_size,
                              variable_lengths=lengths is not None,
                              reset_after=self._cell == "gru", cell_order=self._cell_order,
                              options=self._options,
                              weights_layout="pytorch")
        desc = _backend.StackDesc(layer, self.num_layers, "bidirectional" if D == 2 else "forward")
        params = self._stack_parameters()
        h0 = h0.contiguous()
        c0 = c0.contiguous() if lstm else None
        training = torch.is_grad_enabled() and any(
            t is not None and t.requires_grad for t in (x, h0, c0, *params))
        out = _RnnStackFunction.apply(backend, desc, D, lengths, training, x, h0, c0, *params)
        return out if lstm else (out[0], out[1], None)

    def _run_layers(self, backend, x, lengths, h0, c0):
        """The stack layer by layer, each direction one backend call, torch's dropout between
        layers in training: (output, h_n, c_n) (c_n None for a GRU)."""
        lstm = c0 is not None
        D = 2 if self.bidirectional else 1
        layer_input = x
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            ys = []
            for direction, suffix in enumerate(("", "_reverse")[:D]):
                state = layer * D + direction  # torch's index into h0, c0, h_n and c_n
                outputs = self._run_direction(backend, layer_input, lengths, h0[state],
                                              c0[state] if lstm else None, f"l{layer}{suffix}",
                                              self._reverse_options if direction else
                                              self._options)
                ys.append(outputs[0])
                h_n.append(outputs[1])
                if lstm:
                    c_n.append(outputs[2])
            y = ys[0] if D == 1 else torch.cat(ys, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                y = torch.nn.functional.dropout(y, self.dropout, True)
            layer_input = y
        return layer_input, torch.stack(h_n), torch.stack(c_n) if lstm else None

    def _run_direction(self, backend, layer_input, lengths, h0, c0, names, options):
        """One layer in one direction (parameters weight_ih_<names>, ...; options with
        direction "reverse" for the reverse one): (y, hn) or (y, hn, cn)."""
        lstm = c0 is not None
        w_ih = getattr(self, f"weight_ih_{names}")
        w_hh = getattr(self, f"weight_hh_{names}")
        b_ih = getattr(self, f"bias_ih_{names}") if self.bias else None
        b_hh = getattr(self, f"bias_hh_{names}") if self.bias else None
        w_hr = getattr(self, f"weight_hr_{names}") if self.proj_size else None
        T, B, I = layer_input.shape
        desc = _backend.Desc(self._cell, _DTYPES[layer_input.dtype], T, B, I, self.hidden_size,
                             variable_lengths=lengths is not None,
                             reset_after=self._cell == "gru", cell_order=self._cell_order,
                             options=options, weights_layout="pytorch")
        h0 = h0.contiguous()
        c0 = c0.contiguous() if lstm else None
        training = torch.is_grad_enabled() and any(
            t is not None and t.requires_grad
            for t in (layer_input, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr))
        return _RnnLayerFunction.apply(backend, desc, lengths, training, layer_input, h0, c0,
                                       w_ih, w_hh, b_ih, b_hh, w_hr)


class LSTM(_AspenRNNBase):
    """torch.nn.LSTM computed by Aspen: same arguments, parameters, inputs and outputs.

    Extra keyword arguments: backend (an aspen_torch Backend; default: the process's CPU
    backend) and options (a JSON object of Aspen's LSTM options, e.g.
    '{"availableMemoryProportion": 0.3}').
    """
    _cell, _gates, _cell_order = "lstm", 4, "input,forget,cell,output"


class GRU(_AspenRNNBase):
    """torch.nn.GRU computed by Aspen (its "reset after" GRU, which is PyTorch's): same
    arguments, parameters, inputs and outputs. Extra keyword arguments as for LSTM."""
    _cell, _gates, _cell_order = "gru", 3, "reset,update,cell"


class RNN(_AspenRNNBase):
    """torch.nn.RNN computed by Aspen (its vanilla RNN: h_t = act(x_t W_ih^T + b_ih +
    h_{t-1} W_hh^T + b_hh), act tanh or relu): same arguments (nonlinearity 'tanh' or 'relu',
    fourth positionally as in torch.nn.RNN), parameters, inputs and outputs. Extra keyword
    arguments as for LSTM; Aspen's options for it are partialsType."""
    _gates, _cell_order = 1, None

    def __init__(self, *args, **kwargs):
        if len(args) > 3:  # torch.nn.RNN's positional order: nonlinearity fourth
            nonlinearity, args = args[3], args[:3] + args[4:]
        else:
            nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"aspen_torch.RNN: unknown nonlinearity '{nonlinearity}'. Select "
                             "from 'tanh' or 'relu'.")
        if kwargs.get("proj_size"):
            raise ValueError("aspen_torch.RNN: proj_size argument is only supported for LSTM, "
                             "not RNN or GRU")
        super().__init__(*args, **kwargs)
        self.nonlinearity = nonlinearity
        self._cell = "rnn_" + nonlinearity
