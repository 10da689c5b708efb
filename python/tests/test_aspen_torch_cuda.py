"""aspen_torch's LSTM, GRU, RNN and CNN modules on CUDA tensors (Aspen's GPU device through the layer
backend, ordered with torch's current stream) against torch.nn.LSTM and torch.nn.GRU on the same
device (cuDNN, TF32 off so that both compute in float32): forward outputs, final states and every
gradient within 1e-4 relative, over 1 and 2 layers, one direction or both, packed or not, hx
given or not; a training
step's parameters moved on by SGD the same way; and a tensor on another device refused. Skipped
without CUDA (torch.cuda.is_available()): scripts/gpu-check.sh runs it on a GPU machine.
Run: PYTHONPATH=<build>/python python3 -m unittest discover -s python/tests -p 'test_*cuda*'
"""
import itertools
import unittest

import torch
from torch.nn.utils.rnn import pack_padded_sequence

import aspen_torch

T, B, I, H = 7, 5, 6, 8
LENGTHS = [7, 2, 5, 1, 4]


@unittest.skipUnless(torch.cuda.is_available(), "no CUDA device")
class OnCuda(unittest.TestCase):
    def setUp(self):
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False

    def compare(self, kind, layers, packed, hx, bidirectional=False, proj_size=0):
        torch.manual_seed(99)
        lstm = kind == "lstm"
        stack = {"num_layers": layers, "bidirectional": bidirectional}
        if proj_size:
            stack["proj_size"] = proj_size
        if kind.startswith("rnn_"):  # torch.nn.RNN with that nonlinearity
            stack["nonlinearity"] = kind[4:]
        names = {"lstm": "LSTM", "gru": "GRU"}
        name = names.get(kind, "RNN")
        reference = getattr(torch.nn, name)(I, H, **stack).cuda()
        mine = getattr(aspen_torch, name)(I, H, **stack).cuda()
        mine.load_state_dict(reference.state_dict())
        x = torch.randn(T, B, I, device="cuda")
        states = layers * (2 if bidirectional else 1)
        h0 = torch.randn(states, B, proj_size or H, device="cuda")
        c0 = torch.randn(states, B, H, device="cuda")

        def run(module):
            xs = x.clone().requires_grad_()
            hs, cs = h0.clone().requires_grad_(), c0.clone().requires_grad_()
            inp = pack_padded_sequence(xs, torch.tensor(LENGTHS), enforce_sorted=False) \
                if packed else xs
            state = ((hs, cs) if lstm else hs) if hx else None
            out, final = module(inp, state)
            out = out.data if packed else out
            finals = list(final) if lstm else [final]
            weights = torch.arange(out.numel(), device="cuda").view_as(out).sin()
            ((out * weights).sum() + sum(f.sum() for f in finals)).backward()
            grads = [xs.grad] + ([hs.grad] + ([cs.grad] if lstm else []) if hx else [])
            return [out] + finals + grads + [p.grad for p in module.parameters()]

        for i, (got, want) in enumerate(zip(run(mine), run(reference))):
            self.assertEqual(got.device, want.device)
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5,
                                       msg=lambda m: f"{kind} result {i}: {m}")

    def test_cnn_modules_against_torch_on_cuda(self):
        torch.manual_seed(5)
        for make in (lambda nn: nn.Conv2d(3, 6, 3, stride=2, padding=1, groups=3),
                     lambda nn: nn.BatchNorm2d(3), lambda nn: nn.MaxPool2d(3, 2, 1),
                     lambda nn: nn.AvgPool2d(3, 2, 1, ceil_mode=True)):
            reference = make(torch.nn).cuda()
            mine = make(aspen_torch).cuda()
            mine.load_state_dict(reference.state_dict())
            x = torch.randn(2, 3, 9, 8, device="cuda")

            def run(module):
                xs = x.clone().requires_grad_()
                out = module(xs)
                (out * torch.arange(out.numel(), device="cuda").view_as(out).sin()).sum().backward()
                return [out, xs.grad] + [p.grad for p in module.parameters()]

            for i, (got, want) in enumerate(zip(run(mine), run(reference))):
                self.assertEqual(got.device, want.device)
                torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5,
                                           msg=lambda m: f"{reference} result {i}: {m}")

    def test_against_torch_on_cuda(self):
        for kind, layers, packed, hx, both in itertools.product(
                ("lstm", "gru", "rnn_tanh", "rnn_relu"), (1, 2), (False, True), (False, True),
                (False, True)):
            with self.subTest(kind=kind, layers=layers, packed=packed, hx=hx,
                              bidirectional=both):
                self.compare(kind, layers, packed, hx, both)

    def test_projected_lstm_against_torch_on_cuda(self):
        for layers, packed, both in itertools.product((1, 2), (False, True), (False, True)):
            with self.subTest(layers=layers, packed=packed, bidirectional=both):
                self.compare("lstm", layers, packed, True, both, proj_size=2)

    def test_training_steps_on_a_side_stream(self):
        torch.manual_seed(5)
        reference = torch.nn.LSTM(I, H).cuda()
        mine = aspen_torch.LSTM(I, H).cuda()
        mine.load_state_dict(reference.state_dict())
        x = torch.randn(T, B, I, device="cuda")
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):  # the backend orders itself with torch's current stream
            for module in (mine, reference):
                optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
                for _ in range(5):
                    optimizer.zero_grad()
                    module(x)[0].square().mean().backward()
                    optimizer.step()
        torch.cuda.synchronize()
        for (name, p), q in zip(mine.named_parameters(), reference.parameters()):
            torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")

    def test_devices_must_match(self):
        mine = aspen_torch.GRU(I, H).cuda()
        with self.assertRaisesRegex(RuntimeError, "must be on one device"):
            mine(torch.randn(T, B, I))


if __name__ == "__main__":
    unittest.main()
