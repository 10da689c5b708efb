"""aspen_torch.Conv2d, MaxPool2d, AvgPool2d and BatchNorm2d against torch.nn's modules run in
float64 on the same inputs (the independent reference): outputs and every gradient (input,
weight, bias, gamma, beta) and the running statistics; stride, padding, dilation, groups
including depthwise, batch 1, odd sizes; pooling's padding, ceil mode and count_include_pad, and
max pooling's ties after a ReLU; train and eval, affine, track_running_stats and momentum
(None too); a batch forced through the backend's split path by a small memory limit; and clear
errors. Run: PYTHONPATH=<build>/python /usr/bin/python3 -m unittest discover -s python/tests
"""
import copy
import io
import unittest

import torch

import aspen_torch
from aspen_torch import _backend

RTOL, ATOL = 2e-5, 2e-5


def assert_close(got, want, what):
    torch.testing.assert_close(got.double(), want.double(), rtol=RTOL, atol=ATOL,
                               msg=lambda m: f"{what}: {m}")


def run(module, x, weight):
    """Output and input gradient of sum(module(x) * weight), and the module's parameters'
    gradients by name."""
    x = x.clone().requires_grad_()
    y = module(x)
    (y * weight.to(y.dtype)).sum().backward()
    grads = {name: p.grad for name, p in module.named_parameters()}
    return y.detach(), x.grad, grads


class Conv2dAgainstTorch(unittest.TestCase):
    def check(self, n, c, h, w, k, kernel, **kwargs):
        torch.manual_seed(7)
        mine = aspen_torch.Conv2d(c, k, kernel, **kwargs)
        reference = torch.nn.Conv2d(c, k, kernel, **kwargs).double()
        reference.load_state_dict({k_: v.double() for k_, v in mine.state_dict().items()})
        x = torch.randn(n, c, h, w)
        with torch.no_grad():
            weight = torch.randn_like(reference(x.double())).float()
        y, dx, grads = run(mine, x, weight)
        ry, rdx, rgrads = run(reference, x.double(), weight.double())
        what = f"Conv2d({c}, {k}, {kernel}, {kwargs}) on {tuple(x.shape)}"
        assert_close(y, ry, what + " output")
        assert_close(dx, rdx, what + " input gradient")
        for name in rgrads:
            assert_close(grads[name], rgrads[name], f"{what} {name} gradient")

    def test_stride_padding_dilation_groups(self):
        self.check(2, 3, 9, 8, 4, 3, stride=2, padding=1)
        self.check(1, 4, 7, 7, 6, (3, 2), padding=(2, 0), dilation=(2, 1), groups=2)
        self.check(3, 4, 6, 5, 4, 3, padding=1, groups=4, bias=False)  # depthwise
        self.check(2, 5, 5, 5, 3, 1)
        self.check(1, 3, 11, 9, 2, 5, stride=3, padding="valid")
        self.check(2, 3, 8, 8, 4, 3, padding="same")

    def test_inference_under_no_grad_follows_every_change_to_the_module(self):
        # Grad mode off takes a short path with descriptors kept by configuration: a new batch
        # size, stride, dilation and padding, weights changed in place, the bias dropped, a
        # non-contiguous input all give torch's results; the module still deep-copies and
        # pickles; mismatched types are refused as torch refuses them.
        torch.manual_seed(8)
        mine = aspen_torch.Conv2d(4, 6, 3, padding=1)
        reference = torch.nn.Conv2d(4, 6, 3, padding=1).double()

        def sync():
            reference.load_state_dict({k: v.double() for k, v in mine.state_dict().items()})

        sync()
        with torch.no_grad():
            for step, (shape, change) in enumerate(
                    [((2, 4, 7, 7), None), ((3, 4, 7, 7), None), ((3, 4, 7, 7), "stride"),
                     ((3, 4, 9, 6), "dilation"), ((3, 4, 9, 6), "weight"),
                     ((3, 4, 9, 6), "bias")]):
                if change == "stride":
                    mine.stride = reference.stride = (2, 1)
                elif change == "dilation":
                    mine.dilation = reference.dilation = (2, 2)
                    mine.padding = reference.padding = (2, 2)
                elif change == "weight":
                    mine.weight.mul_(-0.5)
                    sync()
                elif change == "bias":
                    mine.bias = reference.bias = None
                x = torch.randn(*shape)
                assert_close(mine(x), reference(x.double()), f"step {step}: {change}")
            wide = torch.randn(2, 9, 6, 4).permute(0, 3, 1, 2)  # [2, 4, 9, 6], not contiguous
            assert_close(mine(wide), reference(wide.double()), "non-contiguous input")
            clone = copy.deepcopy(mine)
            torch.save(mine, io.BytesIO())
            self.assertTrue(torch.equal(clone(x), mine(x)))
            with self.assertRaisesRegex(RuntimeError, "input type torch.float16 and weight type"):
                mine(x.half())
        with self.assertRaisesRegex(RuntimeError, "input type torch.float16 and weight type"):
            mine(x.half())

    def test_state_dict_and_initialisation_are_torchs(self):
        torch.manual_seed(3)
        mine = aspen_torch.Conv2d(3, 5, 3)
        torch.manual_seed(3)
        reference = torch.nn.Conv2d(3, 5, 3)
        self.assertEqual(list(mine.state_dict()), list(reference.state_dict()))
        for name, value in reference.state_dict().items():
            self.assertTrue(torch.equal(mine.state_dict()[name], value), name)


class PoolingAgainstTorch(unittest.TestCase):
    def check(self, mine, reference, x):
        weight = torch.randn_like(reference(x.double()))
        y, dx, _ = run(mine, x, weight)
        ry, rdx, _ = run(reference, x.double(), weight.double())
        assert_close(y, ry, f"{mine} output")
        assert_close(dx, rdx, f"{mine} input gradient")

    def test_max_and_average_pooling(self):
        torch.manual_seed(11)
        for ceil in (False, True):
            for kernel, stride, padding, shape in [(3, 2, 1, (2, 3, 9, 8)), (2, None, 0, (1, 2, 7, 6)),
                                                   ((3, 2), (2, 1), (1, 0), (2, 2, 7, 7))]:
                x = torch.randn(*shape)
                self.check(aspen_torch.MaxPool2d(kernel, stride, padding, ceil_mode=ceil),
                           torch.nn.MaxPool2d(kernel, stride, padding, ceil_mode=ceil), x)
                for include in (False, True):
                    self.check(aspen_torch.AvgPool2d(kernel, stride, padding, ceil_mode=ceil,
                                                     count_include_pad=include),
                               torch.nn.AvgPool2d(kernel, stride, padding, ceil_mode=ceil,
                                                  count_include_pad=include), x)

    def test_max_pooling_ties_after_relu_go_to_the_first(self):
        torch.manual_seed(12)
        x = torch.relu(torch.randn(2, 3, 8, 8)) * (torch.rand(2, 3, 8, 8) > 0.4)
        self.check(aspen_torch.MaxPool2d(3, 2, 1), torch.nn.MaxPool2d(3, 2, 1), x)


class BatchNorm2dAgainstTorch(unittest.TestCase):
    def pair(self, c, statistics=False, **kwargs):
        """Aspen's module and torch's in float64 with the same state; statistics: running
        statistics away from their initial zeros and ones."""
        mine = aspen_torch.BatchNorm2d(c, **kwargs)
        reference = torch.nn.BatchNorm2d(c, **kwargs).double()
        with torch.no_grad():
            if mine.affine:
                mine.weight.uniform_(0.5, 1.5)
                mine.bias.uniform_(-0.5, 0.5)
            if statistics:
                mine.running_mean.uniform_(-1, 1)
                mine.running_var.uniform_(0.5, 2)
        reference.load_state_dict({k: v.double() if v.is_floating_point() else v
                                   for k, v in mine.state_dict().items()})
        return mine, reference

    def compare(self, mine, reference, x, what):
        weight = torch.randn_like(x)
        y, dx, grads = run(mine, x, weight)
        ry, rdx, rgrads = run(reference, x.double(), weight.double())
        assert_close(y, ry, what + " output")
        assert_close(dx, rdx, what + " input gradient")
        for name in rgrads:
            assert_close(grads[name], rgrads[name], f"{what} {name} gradient")
        for name in ("running_mean", "running_var"):
            if getattr(reference, name) is not None:
                assert_close(getattr(mine, name), getattr(reference, name), f"{what} {name}")

    def test_train_then_eval_with_running_statistics(self):
        torch.manual_seed(21)
        for momentum in (0.1, None):
            mine, reference = self.pair(4, momentum=momentum)
            for step in range(3):
                x = torch.randn(3, 4, 5, 6) * 2 + 1
                self.compare(mine, reference, x, f"train step {step}, momentum {momentum}")
            self.assertEqual(int(mine.num_batches_tracked), 3)
            mine.eval(), reference.eval()
            self.compare(mine, reference, torch.randn(2, 4, 3, 3), f"eval, momentum {momentum}")

    def test_affine_off_and_no_running_statistics(self):
        torch.manual_seed(22)
        mine, reference = self.pair(3, affine=False)
        self.compare(mine, reference, torch.randn(2, 3, 4, 4), "affine=False")
        mine, reference = self.pair(3, track_running_stats=False)
        mine.eval(), reference.eval()  # without running statistics eval uses the batch's
        self.compare(mine, reference, torch.randn(1, 3, 5, 7), "track_running_stats=False")


    def test_eval_uses_running_statistics_wherever_the_module_has_them(self):
        # torch's rule: turning track_running_stats off after the statistics exist still
        # normalises with them in eval (and stops their updates in training).
        torch.manual_seed(23)
        mine, reference = self.pair(3, statistics=True)
        for module in (mine, reference):
            module.track_running_stats = False
        mine.eval(), reference.eval()
        self.compare(mine, reference, torch.randn(2, 3, 4, 5), "eval, tracking turned off")
        with torch.no_grad():
            assert_close(mine(torch.ones(1, 3, 2, 2)), reference(torch.ones(1, 3, 2, 2).double()),
                         "eval under no_grad, tracking turned off")

    def test_inference_under_no_grad_follows_every_change_to_the_module(self):
        # Grad mode off takes a short path with descriptors kept by shape: a new batch size, a
        # new eps, parameters changed in place, half input, non-contiguous input, parameters
        # that are not float32 (the general path) all give torch's results, and the module
        # still deep-copies and pickles.
        torch.manual_seed(24)
        mine, reference = self.pair(5, statistics=True)
        mine.eval(), reference.eval()
        with torch.no_grad():
            for step, (shape, eps) in enumerate((((2, 5, 3, 4), 1e-5), ((3, 5, 3, 4), 1e-5),
                                                 ((3, 5, 3, 4), 0.5), ((1, 5, 1, 1), 0.5))):
                mine.eps = reference.eps = eps
                x = torch.randn(*shape)
                assert_close(mine(x), reference(x.double()), f"step {step}: {shape}, eps {eps}")
            mine.weight.mul_(2)
            reference.weight.mul_(2)
            x = torch.randn(2, 5, 4, 3)
            assert_close(mine(x), reference(x.double()), "weight changed in place")
            wide = torch.randn(2, 4, 3, 5).transpose(1, 3)  # [2, 5, 3, 4], not contiguous
            assert_close(mine(wide), reference(wide.double()), "non-contiguous input")
            half = mine(x.half())
            self.assertEqual(half.dtype, torch.float16)
            torch.testing.assert_close(half.double(), reference(x.half().double()), rtol=2e-3,
                                       atol=2e-3)
            clone = copy.deepcopy(mine)
            buffer = io.BytesIO()
            torch.save(mine, buffer)
            self.assertTrue(torch.equal(clone(x), mine(x)))
            with self.assertRaisesRegex(NotImplementedError, "no double path"):
                mine(x.double())  # the short path refuses float64 data as the general one does
            mine.double()  # float64 parameters: the general path
            with self.assertRaisesRegex(NotImplementedError, "no double path"):
                mine(x.double())


class BackendSplitsAndErrors(unittest.TestCase):
    def test_a_memory_limit_splits_the_batch_with_the_same_results(self):
        torch.manual_seed(31)
        backend = aspen_torch.Backend("cpu", 8)
        x, w = torch.randn(4, 3, 8, 8), torch.randn(5, 3, 3, 3)
        results = []
        for options in (None, '{"memoryLimitBytes": 1}'):
            desc = _backend.ConvDesc("float32", 4, 3, 8, 8, 5, (3, 3), (1, 1), (1, 1), (1, 1), 1,
                                     options)
            p, q = backend.conv2d_output_shape(desc)
            y = torch.empty(4, 5, p, q)
            backend.conv2d_forward(desc, x.data_ptr(), w.data_ptr(), 0, y.data_ptr(), 0)
            dy = torch.ones_like(y)
            dw = torch.empty_like(w)
            backend.conv2d_backward_filter(desc, x.data_ptr(), dy.data_ptr(), dw.data_ptr(), 0, 0)
            results.append((y, dw))
        reference = torch.nn.functional.conv2d(x.double(), w.double(), padding=1)
        for y, dw in results:
            assert_close(y, reference, "output")
        torch.testing.assert_close(results[0][1], results[1][1], rtol=1e-5, atol=1e-5)
        self.assertEqual(backend.cache_stats()["entries"], 4)  # whole batch and 1-image engines

    def test_errors_are_clear(self):
        conv = aspen_torch.Conv2d(3, 4, 3)
        with self.assertRaisesRegex(NotImplementedError, "no double path"):
            aspen_torch.Conv2d(3, 4, 3).double()(torch.randn(1, 3, 5, 5, dtype=torch.float64))
        with self.assertRaisesRegex(RuntimeError, "input type torch.float16 and weight type "
                                                  "torch.float32 should be the same"):
            conv(torch.randn(1, 3, 5, 5).half())
        with self.assertRaisesRegex(NotImplementedError, "padding_mode 'reflect'"):
            aspen_torch.Conv2d(3, 4, 3, padding=1, padding_mode="reflect")(torch.randn(1, 3, 5, 5))
        with self.assertRaisesRegex(ValueError, "must be 4-D"):
            conv(torch.randn(3, 5, 5))
        with self.assertRaisesRegex(ValueError, "larger than the padded input"):
            conv(torch.randn(1, 3, 2, 2))
        # Channel counts that do not match the parameters: refused, on every path (Aspen would
        # read past the weights or statistics), as torch refuses them.
        with self.assertRaisesRegex(RuntimeError, "expects input with 3 channels, but got 5"):
            conv(torch.randn(1, 5, 6, 6))
        with torch.no_grad(), self.assertRaisesRegex(RuntimeError, "but got 5"):
            conv(torch.randn(1, 5, 6, 6))
        grouped = aspen_torch.Conv2d(4, 4, 3, groups=2)
        with self.assertRaisesRegex(RuntimeError, "expects input with 4 channels, but got 5"):
            grouped(torch.randn(1, 5, 6, 6))
        norm = aspen_torch.BatchNorm2d(3)
        for training, grad in ((True, True), (False, True), (False, False)):
            norm.train(training)
            with torch.set_grad_enabled(grad), self.assertRaisesRegex(
                    RuntimeError, "running_mean should contain 5 elements .* not 3"):
                norm(torch.randn(2, 5, 4, 4))
        norm.eval()
        with torch.no_grad():  # the module stays usable
            self.assertEqual(norm(torch.randn(2, 3, 4, 4)).shape, (2, 3, 4, 4))
        with self.assertRaisesRegex(NotImplementedError, "return_indices"):
            aspen_torch.MaxPool2d(2, return_indices=True)(torch.randn(1, 1, 4, 4))
        with self.assertRaisesRegex(NotImplementedError, "divisor_override"):
            aspen_torch.AvgPool2d(2, divisor_override=3)(torch.randn(1, 1, 4, 4))


if __name__ == "__main__":
    unittest.main()


class NoGradientPath(unittest.TestCase):
    """Without a gradient to flow (torch.no_grad, or no input requiring one) the modules skip
    autograd: the same outputs and running statistics as with it, and outputs that need no
    gradient."""

    def test_every_module_gives_the_same_results_with_and_without_autograd(self):
        torch.manual_seed(31)
        x = torch.randn(2, 4, 9, 9)
        for make in (lambda: aspen_torch.Conv2d(4, 3, 3, padding=1),
                     lambda: aspen_torch.MaxPool2d(3, 2, 1),
                     lambda: aspen_torch.AvgPool2d(2),
                     lambda: aspen_torch.BatchNorm2d(4)):
            for training in (True, False):
                with_grad, without = make(), make()
                without.load_state_dict(with_grad.state_dict())
                with_grad.train(training), without.train(training)
                want = with_grad(x.clone().requires_grad_())
                with torch.no_grad():
                    got = without(x)
                what = f"{type(with_grad).__name__} training={training}"
                self.assertFalse(got.requires_grad, what)
                self.assertTrue(torch.equal(got, want.detach()), what)
                for name, buffer in with_grad.named_buffers():
                    self.assertTrue(torch.equal(dict(without.named_buffers())[name], buffer),
                                    f"{what}: {name}")


class TorchThreads(unittest.TestCase):
    """The CPU backend runs Aspen's work on torch's OpenMP threads (default_backend().use_openmp):
    the same bits as on Aspen's own threads and with one torch thread, outputs and gradients."""

    def test_openmp_threads_give_the_same_bits(self):
        torch.manual_seed(37)
        x = torch.randn(3, 4, 15, 15)
        weight = torch.randn(3, 6, 8, 8)
        net = torch.nn.Sequential(aspen_torch.Conv2d(4, 6, 3, padding=1),
                                  aspen_torch.BatchNorm2d(6),
                                  aspen_torch.MaxPool2d(3, 2, 1))
        backend = aspen_torch.default_backend("cpu")
        threads = torch.get_num_threads()
        results = {}
        try:
            for name, openmp, count in (("openmp", True, threads), ("own", False, threads),
                                        ("one torch thread", True, 1)):
                self.assertEqual(backend.use_openmp(openmp), openmp, name)
                torch.set_num_threads(count)
                net.zero_grad(set_to_none=True)  # each run's own gradients, not their sum
                y, dx, grads = run(net, x, weight)
                results[name] = y, dx, {p: g.clone() for p, g in grads.items()}
        finally:
            backend.use_openmp(True)
            torch.set_num_threads(threads)
        want_y, want_dx, want_grads = results["own"]
        for name in ("openmp", "one torch thread"):
            y, dx, grads = results[name]
            self.assertTrue(torch.equal(y, want_y), f"{name}: output")
            self.assertTrue(torch.equal(dx, want_dx), f"{name}: input gradient")
            for p, g in grads.items():
                self.assertTrue(torch.equal(g, want_grads[p]), f"{name}: {p}")
