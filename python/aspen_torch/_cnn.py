"""aspen_torch.Conv2d, MaxPool2d, AvgPool2d and BatchNorm2d: torch.nn's modules computed by Aspen.

Each subclasses its torch.nn module, so the constructor arguments, parameter and buffer names,
shapes, initialisation and state_dict are torch's own; only forward differs: one autograd
Function a call over Aspen's layer backend (aspen/backend.h's CNN calls), whose backward runs
Aspen's backward passes. CPU tensors run on Aspen's CPU executor, CUDA tensors on Aspen's GPU
device (not yet run on a GPU). float32 and float16; float64 is refused by the backend
(NotImplementedError: Aspen has no double path). What Aspen does not do yet raises
NotImplementedError naming the argument: padding modes other than zeros, pooling dilation and
return_indices, divisor_override.
"""
import torch

from . import _backend
from ._layers import _ptr, _stream, default_backend

_NAMES = {torch.float32: "float32", torch.float16: "float16", torch.float64: "float64"}


def _dtype(x):
    if x.dtype not in _NAMES:
        raise NotImplementedError(f"aspen_torch: dtype {x.dtype} is not supported "
                                  "(float32, float16)")
    return _NAMES[x.dtype]


def _f32(t):
    """t as float32 and contiguous: t itself when it already is (Aspen takes its address)."""
    if t.dtype is torch.float32 and t.is_contiguous():
        return t
    return t.detach().float().contiguous()


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


class _NoContext:
    """autograd's ctx when no gradient can flow: what a forward saves for its backward is
    dropped."""

    def save_for_backward(self, *tensors):
        pass


def _run(function, *args):
    """function.apply(*args), or its forward alone when no gradient can flow (grad mode off, or
    no tensor argument requires one): the same result without autograd's bookkeeping, a third of
    a small call's time."""
    if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad
                                       for a in args):
        return function.apply(*args)
    return function.forward(_NoContext(), *args)


def _check_4d(module, x):
    if x.dim() != 4:
        raise ValueError(f"aspen_torch.{module}: input of shape {tuple(x.shape)} must be 4-D "
                         "(N, C, H, W); unbatched input is not supported")


class _Conv2dFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, backend, desc, x, weight, bias):
        x, weight = x.contiguous(), weight.contiguous()
        p, q = backend.conv2d_output_shape(desc)
        y = x.new_empty((x.shape[0], weight.shape[0], p, q))
        backend.conv2d_forward(desc, _ptr(x), _ptr(weight), _ptr(bias), _ptr(y), _stream(x))
        ctx.backend, ctx.desc = backend, desc
        ctx.save_for_backward(x, weight, bias)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, bias = ctx.saved_tensors
        dy = dy.contiguous()
        dx = dw = db = None
        if ctx.needs_input_grad[2]:
            dx = torch.empty_like(x)
            ctx.backend.conv2d_backward_data(ctx.desc, _ptr(weight), _ptr(dy), _ptr(dx),
                                             _stream(x))
        if ctx.needs_input_grad[3] or (bias is not None and ctx.needs_input_grad[4]):
            dw = torch.empty_like(weight)
            db = torch.empty_like(bias) if bias is not None else None
            ctx.backend.conv2d_backward_filter(ctx.desc, _ptr(x), _ptr(dy), _ptr(dw), _ptr(db),
                                               _stream(x))
        return None, None, dx, dw, db


# The inference paths' descriptors (and backends, output shapes) by their configuration: input
# shape, dtype, device and the module's settings. Kept here rather than on the modules, which
# stay picklable and deep-copyable.
_INFERENCE_CALLS = {}


def _remember(key, value):
    if len(_INFERENCE_CALLS) >= 256:  # configurations that keep changing: start again
        _INFERENCE_CALLS.clear()
    _INFERENCE_CALLS[key] = value
    return value


class Conv2d(torch.nn.Conv2d):
    """torch.nn.Conv2d through Aspen's convolution (stride, padding, dilation, groups, bias).
    padding may be a number, a pair, "valid" or "same" (stride 1; an odd dilated kernel)."""

    def _padding(self):
        if self.padding_mode != "zeros":
            raise NotImplementedError(f"aspen_torch.Conv2d: padding_mode '{self.padding_mode}' "
                                      "(only 'zeros')")
        if self.padding == "valid":
            return (0, 0)
        if self.padding == "same":
            spans = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            if any(span % 2 for span in spans):
                raise NotImplementedError("aspen_torch.Conv2d: padding='same' with an even "
                                          "dilated kernel needs asymmetric padding")
            return tuple(span // 2 for span in spans)
        return _pair(self.padding)

    def _desc(self, input):
        _check_4d("Conv2d", input)
        for name in ("weight", "bias"):
            p = self._parameters.get(name)
            if p is not None and p.dtype != input.dtype:  # Aspen reads them as the input's type
                raise RuntimeError(f"aspen_torch.Conv2d: input type {input.dtype} and {name} "
                                   f"type {p.dtype} should be the same")
        n, c, h, w = input.shape
        weight = self._parameters["weight"]
        if c != weight.shape[1] * self.groups:  # Aspen would read past the weights
            raise RuntimeError(f"aspen_torch.Conv2d: weight of shape {tuple(weight.shape)} with "
                               f"groups={self.groups} expects input with "
                               f"{weight.shape[1] * self.groups} channels, but got {c} channels")
        return _backend.ConvDesc(_dtype(input), n, c, h, w, self.out_channels,
                                 tuple(self.kernel_size), self._padding(), tuple(self.stride),
                                 tuple(self.dilation), self.groups)

    def forward(self, input):
        if not torch.is_grad_enabled():
            y = self._inference(input)
            if y is not None:
                return y
        desc = self._desc(input)
        backend = default_backend(input.device)
        return _run(_Conv2dFunction, backend, desc, input, self.weight, self.bias)

    def _inference(self, input):
        """The forward with grad mode off in as few Python operations as it can (see
        BatchNorm2d._inference): the descriptor and output shape made once per configuration
        (_INFERENCE_CALLS). None where the general path must run (parameters not contiguous)."""
        params = self._parameters
        weight, bias = params["weight"], params.get("bias")
        if not weight.is_contiguous() or (bias is not None and not bias.is_contiguous()):
            return None
        key = ("conv", input.shape, input.dtype, input.device, weight.shape, weight.dtype,
               None if bias is None else bias.dtype, self.stride, self.padding, self.dilation,
               self.groups, self.padding_mode)
        cached = _INFERENCE_CALLS.get(key)
        if cached is None:
            desc = self._desc(input)
            backend = default_backend(input.device)
            p, q = backend.conv2d_output_shape(desc)
            cached = _remember(key, (desc, backend, (input.shape[0], weight.shape[0], p, q)))
        x = input if input.is_contiguous() else input.contiguous()
        y = x.new_empty(cached[2])
        cached[1].conv2d_forward(cached[0], x.data_ptr(), weight.data_ptr(),
                                 0 if bias is None else bias.data_ptr(), y.data_ptr(), _stream(x))
        return y


class _Pool2dFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, backend, desc, x):
        x = x.contiguous()
        p, q = backend.pool2d_output_shape(desc)
        y = x.new_empty((x.shape[0], x.shape[1], p, q))
        backend.pool2d_forward(desc, _ptr(x), _ptr(y), _stream(x))
        ctx.backend, ctx.desc = backend, desc
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, y = ctx.saved_tensors
        dy = dy.contiguous()
        dx = torch.empty_like(x)
        ctx.backend.pool2d_backward(ctx.desc, _ptr(x), _ptr(y), _ptr(dy), _ptr(dx), _stream(x))
        return None, None, dx


def _pool(module, mode, x, kernel, stride, padding, ceil_mode, include_padding):
    _check_4d(module, x)
    n, c, h, w = x.shape
    stride = _pair(stride if stride is not None else kernel)
    desc = _backend.PoolDesc(_dtype(x), mode, n, c, h, w, _pair(kernel), _pair(padding),
                             stride, bool(ceil_mode), bool(include_padding))
    return _run(_Pool2dFunction, default_backend(x.device), desc, x)


class MaxPool2d(torch.nn.MaxPool2d):
    """torch.nn.MaxPool2d through Aspen's pooling: the gradient to each window's first maximum,
    as torch's."""

    def forward(self, input):
        if _pair(self.dilation) != (1, 1):
            raise NotImplementedError("aspen_torch.MaxPool2d: dilation (only 1)")
        if self.return_indices:
            raise NotImplementedError("aspen_torch.MaxPool2d: return_indices")
        return _pool("MaxPool2d", "max", input, self.kernel_size, self.stride, self.padding,
                     self.ceil_mode, False)


class AvgPool2d(torch.nn.AvgPool2d):
    """torch.nn.AvgPool2d through Aspen's pooling (count_include_pad and ceil_mode as torch's)."""

    def forward(self, input):
        if self.divisor_override is not None:
            raise NotImplementedError("aspen_torch.AvgPool2d: divisor_override")
        return _pool("AvgPool2d", "avg", input, self.kernel_size, self.stride, self.padding,
                     self.ceil_mode, self.count_include_pad)


class _BatchNormFunction(torch.autograd.Function):
    """Training-mode batch norm: y from this batch's statistics, running statistics (float32
    copies, or None) updated in place; backward from the saved mean and 1 / sqrt(var + eps)."""

    @staticmethod
    def forward(ctx, backend, desc, x, gamma, beta, running_mean, running_var):
        x = x.contiguous()
        y = torch.empty_like(x)
        channels = x.shape[1]
        save_mean = torch.empty(channels, dtype=torch.float32, device=x.device)
        save_inv_std = torch.empty_like(save_mean)
        backend.batchnorm_forward_training(desc, _ptr(x), _ptr(gamma), _ptr(beta), _ptr(y),
                                           _ptr(running_mean), _ptr(running_var),
                                           _ptr(save_mean), _ptr(save_inv_std), _stream(x))
        ctx.backend, ctx.desc = backend, desc
        ctx.save_for_backward(x, gamma, save_mean, save_inv_std)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, gamma, save_mean, save_inv_std = ctx.saved_tensors
        dy = dy.contiguous()
        dx = torch.empty_like(x)
        dgamma, dbeta = torch.empty_like(gamma), torch.empty_like(gamma)
        ctx.backend.batchnorm_backward(ctx.desc, _ptr(x), _ptr(dy), _ptr(gamma), _ptr(save_mean),
                                       _ptr(save_inv_std), _ptr(dx), _ptr(dgamma), _ptr(dbeta),
                                       _stream(x))
        return None, None, dx, dgamma, dbeta, None, None


class _BatchNormInferenceFunction(torch.autograd.Function):
    """Batch norm from the running statistics: y = scale x + shift a channel, computed by Aspen.
    Its gradients (rarely wanted: fine-tuning past frozen statistics) are a per-channel scale
    and sums, taken with torch's operations."""

    @staticmethod
    def forward(ctx, backend, desc, x, gamma, beta, running_mean, running_var, eps):
        x = x.contiguous()
        y = torch.empty_like(x)
        backend.batchnorm_forward_inference(desc, _ptr(x), _ptr(gamma), _ptr(beta),
                                            _ptr(running_mean), _ptr(running_var), _ptr(y),
                                            _stream(x))
        ctx.save_for_backward(x, gamma, running_mean, running_var)
        ctx.eps = eps
        return y

    @staticmethod
    def backward(ctx, dy):
        x, gamma, mean, var = ctx.saved_tensors
        inv = torch.rsqrt(var + ctx.eps).view(1, -1, 1, 1)
        dyf = dy.float()
        whitened = (x.float() - mean.view(1, -1, 1, 1)) * inv
        dx = (dyf * gamma.view(1, -1, 1, 1) * inv).to(x.dtype)
        return (None, None, dx, (dyf * whitened).sum((0, 2, 3)), dyf.sum((0, 2, 3)), None, None,
                None)


def _check_channels(module, c, tensors):
    """Each per-channel tensor (parameters, statistics; None skipped) has c elements: Aspen reads
    c of each."""
    for name, t in tensors:
        if t is not None and t.numel() != c:
            raise RuntimeError(f"aspen_torch.{module}: {name} should contain {c} elements (the "
                               f"input's channels) not {t.numel()}")


class BatchNorm2d(torch.nn.BatchNorm2d):
    """torch.nn.BatchNorm2d through Aspen's batch norm: train and eval, affine,
    track_running_stats and momentum (None: the cumulative average), as torch's. Aspen keeps the
    parameters and statistics in float32 (for float16 data too)."""

    def forward(self, input):
        if not (self.training or torch.is_grad_enabled()):
            y = self._inference(input)
            if y is not None:
                return y
        _check_4d("BatchNorm2d", input)
        n, c, h, w = input.shape
        _check_channels("BatchNorm2d", c, (("running_mean", self.running_mean),
                                           ("running_var", self.running_var),
                                           ("weight", self.weight), ("bias", self.bias)))
        backend = default_backend(input.device)
        if self.affine:
            gamma, beta = _f32(self.weight), _f32(self.bias)
        else:
            gamma = torch.ones(c, dtype=torch.float32, device=input.device)
            beta = torch.zeros_like(gamma)
        # torch's rule: in eval, the running statistics wherever the module has them (even with
        # track_running_stats turned off after they were made), else the batch's.
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        if not use_batch:
            desc = _backend.BatchNormDesc(_dtype(input), n, c, h, w, self.eps, 0.0)
            return _run(_BatchNormInferenceFunction, backend, desc, input, gamma, beta,
                        _f32(self.running_mean), _f32(self.running_var), self.eps)
        momentum = self.momentum
        update = self.training and self.track_running_stats
        if update:
            self.num_batches_tracked.add_(1)
            if momentum is None:  # the cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked)
        desc = _backend.BatchNormDesc(_dtype(input), n, c, h, w, self.eps,
                                      momentum if update else 0.0)
        running_mean = _f32(self.running_mean) if update else None
        running_var = _f32(self.running_var) if update else None
        y = _run(_BatchNormFunction, backend, desc, input, gamma, beta, running_mean, running_var)
        if update:
            with torch.no_grad():  # Aspen wrote float32 buffers in place; others are copies
                if running_mean is not self.running_mean:
                    self.running_mean.copy_(running_mean)
                if running_var is not self.running_var:
                    self.running_var.copy_(running_var)
        return y

    def _inference(self, input):
        """Inference with grad mode off, the common case, in as few Python operations as it can:
        right after a large torch operation the interpreter's own data is out of the caches, and
        each lookup costs a miss (at 8x256x56x56 the general path's Python took 27 us between
        torch calls, 4 us on its own). The descriptor is made once for a shape
        (_INFERENCE_CALLS). None where the general path must run: no affine parameters or
        running statistics, or parameters that are not contiguous float32."""
        params, buffers = self._parameters, self._buffers
        gamma, beta = params.get("weight"), params.get("bias")
        mean, var = buffers.get("running_mean"), buffers.get("running_var")
        if gamma is None or beta is None or mean is None or var is None:
            return None
        for t in (gamma, beta, mean, var):
            if t.dtype is not torch.float32 or not t.is_contiguous():
                return None
        key = ("batchnorm", input.shape, input.dtype, input.device, self.eps, gamma.shape,
               beta.shape, mean.shape, var.shape)
        cached = _INFERENCE_CALLS.get(key)
        if cached is None:
            _check_4d("BatchNorm2d", input)
            n, c, h, w = input.shape
            _check_channels("BatchNorm2d", c, (("running_mean", mean), ("running_var", var),
                                               ("weight", gamma), ("bias", beta)))
            desc = _backend.BatchNormDesc(_dtype(input), n, c, h, w, self.eps, 0.0)
            cached = _remember(key, (desc, default_backend(input.device)))
        x = input if input.is_contiguous() else input.contiguous()
        y = torch.empty_like(x)
        cached[1].batchnorm_forward_inference(cached[0], x.data_ptr(), gamma.data_ptr(),
                                              beta.data_ptr(), mean.data_ptr(), var.data_ptr(),
                                              y.data_ptr(), _stream(x))
        return y
