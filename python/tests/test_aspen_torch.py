"""aspen_torch.LSTM, GRU and RNN against torch.nn.LSTM, GRU and RNN (the independent
reference): forward outputs, final states and every gradient within 1e-5 relative (float32),
over batch_first both ways, 1 and 2 layers, with and without bias, PackedSequence inputs
(variable lengths) and hx given or not; bidirectional stacks of 1 to 3 layers over the same
combinations against torch in float64; LSTM projections (proj_size) over those combinations
against torch in float64; the vanilla RNN (tanh and relu) over bidirectional stacks of 1 to 3
layers and the same combinations against torch in float64; state_dict round trips; the same seed giving the same
parameters; the layer cache reusing compiled layers; and clear errors for what is not supported.
Run: PYTHONPATH=<build>/python /usr/bin/python3 -m unittest discover -s python/tests
"""
import itertools
import unittest

import torch
from torch.nn.utils.rnn import pack_padded_sequence

import aspen_torch

T, B, I, H = 6, 4, 5, 7
LENGTHS = [6, 3, 1, 5]  # PackedSequence: every row at least 1 (torch's rule), unsorted


def assert_close(got, want, what, rtol=1e-5, atol=1e-6):
    if want.dtype == torch.float64:  # a float64 reference: Aspen's float32 results widened
        got = got.double()
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")


def classes(kind):
    """torch.nn's module, aspen_torch's and the extra keyword arguments for a kind: "lstm", "gru",
    "rnn_tanh" or "rnn_relu" (torch.nn.RNN with that nonlinearity)."""
    if kind.startswith("rnn_"):
        return torch.nn.RNN, aspen_torch.RNN, {"nonlinearity": kind[4:]}
    if kind == "lstm":
        return torch.nn.LSTM, aspen_torch.LSTM, {}
    return torch.nn.GRU, aspen_torch.GRU, {}


class AgainstTorch(unittest.TestCase):
    def compare(self, kind, *, layers, bias, batch_first, packed, hx, bidirectional=False,
                float64=False, proj_size=0, one_call=True):
        # float64: the reference runs in float64 on the same (float32) inputs and parameters.
        torch.manual_seed(1234)
        lstm = kind == "lstm"
        reference_class, mine_class, extra = classes(kind)
        if proj_size:
            extra = dict(extra, proj_size=proj_size)
        reference = reference_class(I, H, num_layers=layers, bias=bias, batch_first=batch_first,
                                    bidirectional=bidirectional, **extra)
        mine = mine_class(I, H, num_layers=layers, bias=bias, batch_first=batch_first,
                          bidirectional=bidirectional, **extra)
        mine.load_state_dict(reference.state_dict())
        mine.one_call = one_call
        if float64:
            reference.double()
        D = 2 if bidirectional else 1
        W = proj_size or H  # the width of h
        x = torch.randn((B, T, I) if batch_first else (T, B, I))
        h0 = torch.randn(layers * D, B, W)
        c0 = torch.randn(layers * D, B, H)
        out_weight = torch.randn((B, T, D * W) if batch_first else (T, B, D * W))
        hn_weight, cn_weight = torch.randn(layers * D, B, W), torch.randn(layers * D, B, H)
        tolerance = {"rtol": 2e-5, "atol": 2e-6} if float64 else {}

        def run(module):
            dtype = next(module.parameters()).dtype
            xs = x.to(dtype).requires_grad_()
            hs, cs = h0.to(dtype).requires_grad_(), c0.to(dtype).requires_grad_()
            inp = pack_padded_sequence(xs, torch.tensor(LENGTHS), batch_first=batch_first,
                                       enforce_sorted=False) if packed else xs
            state = ((hs, cs) if lstm else hs) if hx else None
            out, final = module(inp, state)
            h_n, c_n = final if lstm else (final, None)
            if packed:
                out_values = out.data
                loss = (out.data * torch.arange(out.data.numel()).view_as(out.data).sin()).sum()
            else:
                out_values = out
                loss = (out * out_weight.to(dtype)).sum()
            loss = loss + (h_n * hn_weight.to(dtype)).sum()
            if lstm:
                loss = loss + (c_n * cn_weight.to(dtype)).sum()
            loss.backward()
            grads = {"input": xs.grad}
            if hx:
                grads["h0"] = hs.grad
                if lstm:
                    grads["c0"] = cs.grad
            for name, p in module.named_parameters():
                grads[name] = p.grad
            return out_values, h_n, c_n, grads, out

        want = run(reference)
        got = run(mine)
        assert_close(got[0], want[0], "output", **tolerance)
        assert_close(got[1], want[1], "h_n", **tolerance)
        if lstm:
            assert_close(got[2], want[2], "c_n", **tolerance)
        self.assertEqual(sorted(got[3]), sorted(want[3]))
        for name in want[3]:
            assert_close(got[3][name], want[3][name], f"gradient of {name}", **tolerance)
        if packed:
            self.assertTrue(torch.equal(got[4].batch_sizes, want[4].batch_sizes))
            self.assertTrue(torch.equal(got[4].sorted_indices, want[4].sorted_indices))

    def test_every_combination(self):
        for kind, layers, bias, batch_first, packed, hx in itertools.product(
                ("lstm", "gru"), (1, 2), (True, False), (False, True), (False, True),
                (True, False)):
            with self.subTest(kind=kind, layers=layers, bias=bias, batch_first=batch_first,
                              packed=packed, hx=hx):
                self.compare(kind, layers=layers, bias=bias, batch_first=batch_first,
                             packed=packed, hx=hx)

    def test_bidirectional_stacks_against_float64(self):
        # Both directions of every layer, each row's reverse pass from its own last step
        # (LENGTHS has a length-1 row), the outputs concatenated per step and the final states
        # interleaved by direction as torch lays them out.
        for kind, layers, bias, batch_first, packed, hx in itertools.product(
                ("lstm", "gru"), (1, 2, 3), (True, False), (False, True), (False, True),
                (True, False)):
            with self.subTest(kind=kind, layers=layers, bias=bias, batch_first=batch_first,
                              packed=packed, hx=hx):
                self.compare(kind, layers=layers, bias=bias, batch_first=batch_first,
                             packed=packed, hx=hx, bidirectional=True, float64=True)

    def test_vanilla_rnn_against_float64(self):
        # torch.nn.RNN, tanh and relu: bidirectional or not, 1 to 3 layers, with and without
        # bias, batch_first both ways, packed variable lengths (a length-1 row), hx or not.
        for kind, layers, bidirectional, bias, batch_first, packed, hx in itertools.product(
                ("rnn_tanh", "rnn_relu"), (1, 2, 3), (False, True), (True, False),
                (False, True), (False, True), (True, False)):
            with self.subTest(kind=kind, layers=layers, bidirectional=bidirectional, bias=bias,
                              batch_first=batch_first, packed=packed, hx=hx):
                self.compare(kind, layers=layers, bias=bias, batch_first=batch_first,
                             packed=packed, hx=hx, bidirectional=bidirectional, float64=True)

    def test_stacks_layer_by_layer_against_float64(self):
        # one_call False: each layer and direction its own backend call, as a training stack
        # with dropout runs (the default runs a stack as one call: the tests above).
        for kind, layers, packed in itertools.product(("lstm", "gru", "rnn_relu"), (1, 2),
                                                      (False, True)):
            with self.subTest(kind=kind, layers=layers, packed=packed):
                self.compare(kind, layers=layers, bias=True, batch_first=False, packed=packed,
                             hx=True, bidirectional=True, float64=True, one_call=False)

    def test_projected_lstm_against_float64(self):
        # proj_size: h_t = W_hr (o * tanh(c_t)), P wide, in every layer and direction; the
        # weight_hr gradients included (compare checks every named parameter's).
        for layers, bidirectional, bias, batch_first, packed, hx in itertools.product(
                (1, 2, 3), (False, True), (True, False), (False, True), (False, True),
                (True, False)):
            for proj_size in ((1, 3) if layers == 1 and not bidirectional else (3,)):
                with self.subTest(layers=layers, bidirectional=bidirectional, bias=bias,
                                  batch_first=batch_first, packed=packed, hx=hx,
                                  proj_size=proj_size):
                    self.compare("lstm", layers=layers, bias=bias, batch_first=batch_first,
                                 packed=packed, hx=hx, bidirectional=bidirectional,
                                 float64=True, proj_size=proj_size)

    def test_projected_lstm_parameters_match_torchs(self):
        torch.manual_seed(5)
        reference = torch.nn.LSTM(I, H, num_layers=2, bidirectional=True, proj_size=3)
        torch.manual_seed(5)
        mine = aspen_torch.LSTM(I, H, num_layers=2, bidirectional=True, proj_size=3)
        want = dict(reference.named_parameters())
        got = dict(mine.named_parameters())
        self.assertEqual(list(got), list(want))  # names and registration order
        for name in want:
            self.assertTrue(torch.equal(got[name], want[name]), name)
        self.assertIn("proj_size=3", repr(mine))

    def test_gradients_accumulate_like_torch(self):
        # Two backward passes, then zero_grad and a third: every .grad must be torch's (a
        # gradient tensor shared by two parameters would double on accumulation).
        for kind in ("LSTM", "GRU"):
            torch.manual_seed(5)
            reference = getattr(torch.nn, kind)(I, H, num_layers=2)
            mine = getattr(aspen_torch, kind)(I, H, num_layers=2)
            mine.load_state_dict(reference.state_dict())
            x = torch.randn(T, B, I)
            for module in (reference, mine):
                out, _ = module(x)
                loss = (out * out).sum()
                loss.backward(retain_graph=True)
                loss.backward()
            for (name, want), got in zip(reference.named_parameters(), mine.parameters()):
                assert_close(got.grad, want.grad, f"{kind} {name} after two backward passes")
            for module in (reference, mine):
                module.zero_grad()
                out, _ = module(x)
                out.sum().backward()
            for (name, want), got in zip(reference.named_parameters(), mine.parameters()):
                assert_close(got.grad, want.grad, f"{kind} {name} after zero_grad")

    def test_unbatched_input_and_eval_dropout(self):
        for kind in ("lstm", "gru"):
            torch.manual_seed(3)
            cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
            reference = cls(I, H, num_layers=2, dropout=0.5).eval()
            mine = (aspen_torch.LSTM if kind == "lstm" else aspen_torch.GRU)(
                I, H, num_layers=2, dropout=0.5).eval()
            mine.load_state_dict(reference.state_dict())
            x = torch.randn(T, I)  # no batch dimension
            with torch.no_grad():
                want, got = reference(x), mine(x)
            assert_close(got[0], want[0], f"{kind} unbatched output")
            want_h = want[1][0] if kind == "lstm" else want[1]
            got_h = got[1][0] if kind == "lstm" else got[1]
            assert_close(got_h, want_h, f"{kind} unbatched h_n")

    def test_training_dropout_is_torchs(self):
        # Dropout between layers (not after the last) in training: from one seed, the same
        # masks as torch.nn's, so the same outputs and gradients; deterministic for a seed; each
        # mask drops about p of the elements and keeps the rest scaled by 1 / (1 - p).
        from unittest import mock
        p = 0.4
        for kind in ("LSTM", "GRU", "RNN"):
            torch.manual_seed(8)
            reference = getattr(torch.nn, kind)(I, H, num_layers=3, dropout=p,
                                                bidirectional=True).train()
            mine = getattr(aspen_torch, kind)(I, H, num_layers=3, dropout=p,
                                              bidirectional=True).train()
            mine.load_state_dict(reference.state_dict())
            x = torch.randn(T, B, I)
            results = []
            for module in (reference, mine, mine):
                module.zero_grad()
                torch.manual_seed(99)
                out = module(x)[0]
                (out * out).sum().backward()
                results.append((out.detach(), [q.grad.clone() for q in module.parameters()]))
            (want, want_grads), (got, got_grads), (again, again_grads) = results
            assert_close(got, want, f"{kind} training output with dropout")
            for (name, _), g, w in zip(reference.named_parameters(), got_grads, want_grads):
                assert_close(g, w, f"{kind} {name} gradient with dropout")
            self.assertTrue(torch.equal(got, again))  # the same seed, the same bits
            self.assertTrue(all(torch.equal(a, b) for a, b in zip(got_grads, again_grads)))
            # The masks: two between three layers, none after the last.
            seen = []
            real_dropout = torch.nn.functional.dropout

            def spy(tensor, rate, training, *args):
                out = real_dropout(tensor, rate, training, *args)
                seen.append((tensor.detach(), out.detach()))
                return out
            big = torch.randn(50, 16, I)
            with mock.patch("torch.nn.functional.dropout", spy):
                mine(big)
            self.assertEqual(len(seen), 2)
            for before, after in seen:
                kept = after != 0
                n = before.numel()
                dropped = n - int(kept.sum())
                # Binomial(n, p): within 5 standard deviations.
                self.assertLess(abs(dropped - p * n), 5 * (n * p * (1 - p)) ** 0.5)
                assert_close(after[kept], before[kept] / (1 - p), f"{kind} kept elements")

    def test_training_dropout_runs_and_drops(self):
        torch.manual_seed(4)
        mine = aspen_torch.LSTM(I, H, num_layers=2, dropout=0.5).train()
        x = torch.randn(T, B, I)
        out_a, _ = mine(x)
        out_b, _ = mine(x)
        self.assertFalse(torch.equal(out_a, out_b))  # dropout between the layers is random
        mine.eval()
        with torch.no_grad():
            self.assertTrue(torch.equal(mine(x)[0], mine(x)[0]))


class Parameters(unittest.TestCase):
    def test_same_seed_same_parameters_and_names(self):
        for kind in ("LSTM", "GRU", "RNN"):
            torch.manual_seed(9)
            reference = getattr(torch.nn, kind)(I, H, num_layers=2)
            torch.manual_seed(9)
            mine = getattr(aspen_torch, kind)(I, H, num_layers=2)
            want, got = reference.state_dict(), mine.state_dict()
            self.assertEqual(list(got), list(want))
            for name in want:
                self.assertTrue(torch.equal(got[name], want[name]), f"{kind} {name}")

    def test_state_dict_round_trips_both_ways(self):
        for kind in ("LSTM", "GRU", "RNN"):
            torch.manual_seed(10)
            mine = getattr(aspen_torch, kind)(I, H, num_layers=2, batch_first=True)
            reference = getattr(torch.nn, kind)(I, H, num_layers=2, batch_first=True)
            reference.load_state_dict(mine.state_dict())  # Aspen's into torch's
            x = torch.randn(B, T, I)
            with torch.no_grad():
                assert_close(mine(x)[0], reference(x)[0], f"{kind} after loading Aspen's")
            torch.manual_seed(11)
            other = getattr(torch.nn, kind)(I, H, num_layers=2, batch_first=True)
            mine.load_state_dict(other.state_dict())  # and back
            with torch.no_grad():
                assert_close(mine(x)[0], other(x)[0], f"{kind} after loading torch's")


class Float16(unittest.TestCase):
    """float16 modules (which torch.nn.LSTM and GRU do not run on the CPU) against torch.nn in
    float64 holding the same, binary16-rounded parameters and inputs: outputs, final states and
    gradients within binary16's precision (11-bit significand) over a few steps."""

    def check(self, kind, packed):
        torch.manual_seed(77)
        lstm = kind == "lstm"
        torch_cls, aspen_cls, extra = classes(kind)
        mine = aspen_cls(I, H, num_layers=2, **extra).half()  # .half() as well as dtype= below
        self.assertEqual(aspen_cls(I, H, dtype=torch.float16, **extra).weight_hh_l0.dtype,
                         torch.float16)
        reference = torch_cls(I, H, num_layers=2, **extra).double()
        reference.load_state_dict(mine.state_dict())  # the rounded values, widened
        x = torch.randn(T, B, I).half()
        h0 = torch.randn(2, B, H).half()
        c0 = torch.randn(2, B, H).half()

        def run(module, dtype):
            xs = x.to(dtype, copy=True).requires_grad_()
            hs = h0.to(dtype, copy=True).requires_grad_()
            cs = c0.to(dtype, copy=True).requires_grad_()
            inp = pack_padded_sequence(xs, torch.tensor(LENGTHS), enforce_sorted=False) \
                if packed else xs
            out, final = module(inp, (hs, cs) if lstm else hs)
            out = out.data if packed else out
            finals = list(final) if lstm else [final]
            (out.sum() + sum(f.sum() for f in finals)).backward()
            grads = [xs.grad, hs.grad] + [p.grad for p in module.parameters()]
            return [out] + finals + grads

        got = run(mine, torch.float16)
        want = run(reference, torch.float64)
        for i, (g, w) in enumerate(zip(got, want)):
            self.assertIsNotNone(w, f"reference result {i}")
            self.assertEqual(g.dtype, torch.float16, f"result {i}")
            torch.testing.assert_close(g.double(), w.detach(), rtol=5e-3, atol=5e-3,
                                       msg=lambda m: f"{kind} result {i}: {m}")

    def test_lstm_gru_and_rnn_in_float16(self):
        for kind, packed in itertools.product(("lstm", "gru", "rnn_tanh", "rnn_relu"),
                                              (False, True)):
            with self.subTest(kind=kind, packed=packed):
                self.check(kind, packed)

    def test_input_dtype_must_match(self):
        with self.assertRaisesRegex(TypeError, "input must have the type torch.float16"):
            aspen_torch.LSTM(I, H, dtype=torch.float16)(torch.randn(T, B, I))


class Backend(unittest.TestCase):
    def test_cache_reuses_compiled_layers(self):
        backend = aspen_torch.Backend("cpu", 8)
        torch.manual_seed(12)
        mine = aspen_torch.GRU(I, H, backend=backend)
        x = torch.randn(T, B, I, requires_grad=True)
        for _ in range(3):
            out, h_n = mine(x)
            (out.sum() + h_n.sum()).backward()
        stats = backend.cache_stats()
        self.assertEqual(stats["compiles"], 1)  # the training engine, reused
        self.assertEqual(stats["misses"], 1)
        # Each training forward looks its layer up twice (reserve size, run), each backward once:
        # 9 lookups, the first one the miss.
        self.assertEqual(stats["hits"], 8)
        with torch.no_grad():
            mine(x)
        self.assertEqual(backend.cache_stats()["compiles"], 2)  # the inference engine

    def test_a_stack_is_one_engine(self):
        # A 3-layer bidirectional stack without dropout: one backend call, one engine; layer by
        # layer (one_call False) four more: layer 0 and the layers above it, each direction.
        backend = aspen_torch.Backend("cpu", 16)
        torch.manual_seed(13)
        mine = aspen_torch.LSTM(I, H, num_layers=3, bidirectional=True, backend=backend)
        x = torch.randn(T, B, I, requires_grad=True)
        out, (h_n, _) = mine(x)
        (out.sum() + h_n.sum()).backward()
        self.assertEqual(backend.cache_stats()["compiles"], 1)
        mine.one_call = False
        out2, (h_n2, _) = mine(x)
        self.assertEqual(backend.cache_stats()["compiles"], 5)
        assert_close(out2, out, "the output layer by layer")
        assert_close(h_n2, h_n, "h_n layer by layer")
        # Training with dropout keeps torch's dropout, so runs layer by layer.
        mine.one_call, mine.dropout = True, 0.5
        self.assertFalse(mine._stack_in_one_call())
        mine.eval()
        self.assertTrue(mine._stack_in_one_call())

    def test_errors_are_clear(self):
        with self.assertRaisesRegex(ValueError, "options must not set direction"):
            aspen_torch.LSTM(I, H, options='{"direction": "reverse"}')
        with self.assertRaisesRegex(ValueError, "bidirectional should be True or False"):
            aspen_torch.GRU(I, H, bidirectional=1)
        with self.assertRaisesRegex(ValueError, "proj_size has to be smaller than hidden_size"):
            aspen_torch.LSTM(I, H, proj_size=H)
        with self.assertRaisesRegex(ValueError, "proj_size should be a positive integer"):
            aspen_torch.LSTM(I, H, proj_size=-1)
        with self.assertRaisesRegex(ValueError, "only supported for LSTM"):
            aspen_torch.GRU(I, H, proj_size=2)
        with self.assertRaisesRegex(ValueError, "options must not set projSize"):
            aspen_torch.LSTM(I, H, options='{"projSize": 2}')
        with self.assertRaisesRegex(RuntimeError, "Expected hidden size"):
            aspen_torch.LSTM(I, H, proj_size=2)(torch.randn(T, B, I),
                                                (torch.randn(1, B, H), torch.randn(1, B, H)))
        with self.assertRaisesRegex(ValueError, "hidden_size"):
            aspen_torch.GRU(I, 0)
        with self.assertRaisesRegex(TypeError, "float64"):
            aspen_torch.LSTM(I, H)(torch.randn(T, B, I, dtype=torch.float64))
        with self.assertRaisesRegex(TypeError, "parameters of dtype torch.float64"):
            aspen_torch.LSTM(I, H).double()(torch.randn(T, B, I, dtype=torch.float64))
        with self.assertRaisesRegex(TypeError, "bfloat16"):
            aspen_torch.GRU(I, H, dtype=torch.bfloat16)
        with self.assertRaisesRegex(ValueError, "input_size"):
            aspen_torch.LSTM(I, H)(torch.randn(T, B, I + 1))
        with self.assertRaisesRegex(RuntimeError, "Expected hidden size"):
            aspen_torch.GRU(I, H)(torch.randn(T, B, I), torch.randn(2, B, H))
        with self.assertRaisesRegex(ValueError, "noSuchOption"):
            aspen_torch.LSTM(I, H, options='{"noSuchOption": 1}')(torch.randn(T, B, I))
        with self.assertRaisesRegex(ValueError, "unknown nonlinearity 'sigmoid'"):
            aspen_torch.RNN(I, H, nonlinearity="sigmoid")
        with self.assertRaisesRegex(ValueError, "only supported for LSTM"):
            aspen_torch.RNN(I, H, proj_size=2)
        with self.assertRaisesRegex(ValueError, "stepMethod"):  # the LSTM's, not the RNN's
            aspen_torch.RNN(I, H, options='{"stepMethod": "fused"}')(torch.randn(T, B, I))
        self.assertIn("nonlinearity=relu", repr(aspen_torch.RNN(I, H, 2, "relu")))
        if not torch.cuda.is_available():
            with self.assertRaisesRegex(RuntimeError, "device 'gpu'.*no CUDA GPU"):
                aspen_torch.Backend("gpu", 0)
        with self.assertRaisesRegex(ValueError, "device 'gpu:x'"):
            aspen_torch.Backend("gpu:x", 0)
        with self.assertRaisesRegex(NotImplementedError, "device meta"):
            aspen_torch.LSTM(I, H, device="meta")


if __name__ == "__main__":
    unittest.main()
