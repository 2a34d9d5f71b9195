#!/usr/bin/python3
"""Unit tests of bench_serving.py's parts that need no stack: the workload draws, the drivers'
concurrency, the figures, the HTTP SSE reader against a scripted server on port 0, the error
kinds, the overload verdict, the checks that fail a run, and the doc section it writes.
(bench_serving.py --quick, a CTest entry of its own, runs the real stack.)"""
import http.server
import json
import os
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serving_load as load  # noqa: E402
import serving_report as report  # noqa: E402


def outcome(sent, latency, kind="ok", job_id="", text="t", key=(0, 32), protocol="http"):
    return load.Outcome(load.Request(*key), protocol, sent, t_end=sent + latency, t_first=sent + latency / 2,
                        kind=kind, text=text, tokens=10, job_id=job_id)


def run_of(outcomes, mode="closed", setting="c=1", wall=10.0):
    """A run whose answers all have a text alone (their own)."""
    run = report.Run("http", mode, setting, outcomes, wall, load.figures(outcomes, wall))
    report.compare([run], {(o.protocol, o.request.key): o.text for o in outcomes})
    return run


class WorkloadTest(unittest.TestCase):
    def test_draws_are_seeded_and_use_every_length(self):
        a, b = load.draw(3, 200, [32, 64, 96]), load.draw(3, 200, [32, 64, 96])
        self.assertEqual(a, b)
        self.assertNotEqual(a, load.draw(4, 200, [32, 64, 96]))
        self.assertEqual({r.max_tokens for r in a}, {32, 64, 96})
        self.assertEqual({r.prompt for r in a}, set(range(len(load.PROMPTS))))

    def test_poisson_schedule_has_the_rate(self):
        arrivals = load.poisson_schedule(1, 50.0, 100.0)
        self.assertAlmostEqual(len(arrivals) / 100.0, 50.0, delta=3.0)
        self.assertEqual(arrivals, sorted(arrivals))
        self.assertLess(arrivals[-1], 100.0)

    def test_answer_tokens_stop_at_the_first_eos_or_eot(self):
        self.assertEqual(load.answer_tokens({0: 7, 1: 8, 2: 5, 3: 0, 4: 9}, {0, 5}), 2)
        self.assertEqual(load.answer_tokens({3: 0, 0: 7, 1: 8, 2: 9}, {0, 5}), 3)  # unmasked in any order
        self.assertEqual(load.answer_tokens({0: 7, 1: 8}, {0, 5}), 2)


class DriverTest(unittest.TestCase):
    def test_closed_loop_keeps_the_concurrency_and_sends_everything(self):
        lock, state = threading.Lock(), {"now": 0, "max": 0}

        def send(req):
            with lock:
                state["now"] += 1
                state["max"] = max(state["max"], state["now"])
            time.sleep(0.01)
            with lock:
                state["now"] -= 1
            return outcome(time.monotonic(), 0.01, key=req.key)

        requests = load.draw(1, 24, [32])
        outcomes, wall = load.run_closed(send, requests, 4)
        self.assertEqual(len(outcomes), 24)
        self.assertEqual(state["max"], 4)
        self.assertGreater(wall, 0.05)

    def test_open_loop_sends_at_the_arrival_times(self):
        sent = []
        arrivals = [0.0, 0.05, 0.1]
        outcomes, wall = load.run_open(lambda req: sent.append(time.monotonic()) or outcome(0, 0), load.draw(1, 3, [32]),
                                       arrivals)
        self.assertEqual(len(outcomes), 3)
        self.assertGreaterEqual(sent[2] - sent[0], 0.09)


class FiguresTest(unittest.TestCase):
    def test_percentile_interpolates(self):
        self.assertEqual(load.percentile([1, 2, 3, 4, 5], 50), 3)
        self.assertAlmostEqual(load.percentile(list(range(1, 101)), 99), 99.01)
        self.assertIsNone(load.percentile([], 50))

    def test_figures_count_errors_by_kind_and_only_answers_in_throughput(self):
        outs = [outcome(0, 1.0), outcome(0, 3.0), outcome(0, 0.1, kind="429"), outcome(0, 5, kind="timeout")]
        f = load.figures(outs, 10.0)
        self.assertEqual((f.requests, f.ok), (4, 2))
        self.assertEqual(f.errors, {"429": 1, "5xx": 0, "timeout": 1, "other": 0})
        self.assertAlmostEqual(f.tokens_per_s, 2.0)
        self.assertAlmostEqual(f.latency_p50, 2.0)


class ScriptedServer(http.server.BaseHTTPRequestHandler):
    """Answers POSTs with what the test put in `script`: (status, [SSE data lines])."""
    script = (200, [])

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        status, events = self.script
        self.send_response(status)
        self.send_header("X-Unmask-Job-Id", "job-1")
        self.end_headers()
        for e in events:
            self.wfile.write((e if e.startswith(":") else "data: " + e).encode() + b"\n\n")
            self.wfile.flush()
            time.sleep(0.02)

    def log_message(self, *args):
        pass


class HttpRequestTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ScriptedServer)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.url = f"http://127.0.0.1:{cls.server.server_address[1]}"

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()

    def send(self, script, prompt=0):
        ScriptedServer.script = script
        return load.http_request(self.url, load.Request(prompt, 32), load.Params(stop_ids=frozenset({0})))

    def test_a_stream_gives_text_first_text_time_and_tokens(self):
        def step(text, positions, tokens):
            return json.dumps({"choices": [{"text": text}], "unmask": {"positions": positions, "tokens": tokens}})

        o = self.send((200, [json.dumps({"choices": [{"text": ""}]}), ": started on executor-1", step("", [3], [9]),
                             step(" And", [0], [7]), step(" God", [1, 2], [8, 0]), "[DONE]"]))
        self.assertEqual((o.kind, o.text, o.job_id, o.tokens), ("ok", " And God", "job-1", 2))
        self.assertGreater(o.t_first - o.t_send, 0.05)  # the chunk with text, not the first chunk
        self.assertGreaterEqual(o.t_end, o.t_first)

    def test_chat_deltas_are_read(self):
        chat = next(i for i, (kind, _) in enumerate(load.PROMPTS) if kind == "chat")
        o = self.send((200, [json.dumps({"choices": [{"delta": {"content": "Yea"}}]}), "[DONE]"]), prompt=chat)
        self.assertEqual(o.text, "Yea")

    def test_refusals_and_broken_streams_have_their_kind(self):
        self.assertEqual(self.send((429, [])).kind, "429")
        self.assertEqual(self.send((503, [])).kind, "5xx")
        self.assertEqual(self.send((400, [])).kind, "other")
        self.assertEqual(self.send((200, [json.dumps({"error": {"type": "server_error"}})])).kind, "5xx")
        self.assertEqual(self.send((200, [json.dumps({"choices": [{"text": "x"}]})])).kind, "other")  # no [DONE]

    def test_grpc_codes_map_to_kinds(self):
        self.assertEqual(load.classify_grpc("RESOURCE_EXHAUSTED"), "429")
        self.assertEqual(load.classify_grpc("DEADLINE_EXCEEDED"), "timeout")
        self.assertEqual(load.classify_grpc("UNAVAILABLE"), "5xx")
        self.assertEqual(load.classify_grpc("INVALID_ARGUMENT"), "other")


class VerdictTest(unittest.TestCase):
    def test_a_bounded_overload_with_refusals_passes(self):
        outs = [outcome(t, 2.0, job_id=f"j{t}") for t in range(60)] + [outcome(t, 0.01, kind="429") for t in range(60)]
        v = report.overload_verdict(run_of(outs, "overload"), 60, {})
        self.assertTrue(v.passed)
        self.assertEqual(v.accepted, 60)

    def test_a_growing_p99_fails(self):
        outs = [outcome(t, 1.0 + t / 5.0, job_id=f"j{t}") for t in range(60)]
        v = report.overload_verdict(run_of(outs, "overload"), 60, {})
        self.assertFalse(v.bounded)
        self.assertFalse(v.passed)

    def test_a_timeout_or_a_5xx_fails_and_a_lost_job_is_named(self):
        outs = [outcome(t, 2.0, job_id=f"j{t}") for t in range(60)]
        outs.append(outcome(30, 120, kind="timeout", job_id="gone"))
        v = report.overload_verdict(run_of(outs, "overload"), 60, {"gone": "running"})
        self.assertFalse(v.answers_ok)
        self.assertEqual(v.lost, {"gone": "running"})
        self.assertIn("overload", " ".join(report.failures([], [v])))


class ChecksTest(unittest.TestCase):
    def test_an_error_in_a_closed_run_or_a_different_text_fails(self):
        ok = run_of([outcome(0, 1)])
        self.assertEqual(report.failures([ok], []), [])
        self.assertTrue(report.failures([run_of([outcome(0, 1, kind="5xx")])], []))
        alone = {("http", (0, 32)): "alone"}
        concurrent = run_of([outcome(0, 1, text="other")], setting="c=2")
        report.compare([concurrent], alone)
        self.assertEqual((concurrent.differ, concurrent.compared), (1, 1))
        self.assertTrue(report.failures([concurrent], []))
        report.compare([concurrent], {})  # no text alone to compare with: a failure too
        self.assertTrue(report.failures([concurrent], []))
        self.assertIn("| http | 2 | 1 | 1 |", report.render(_Args(), [concurrent], [], 0, None, time.time(), (0, 0, 0),
                                                           (1.0, 2.0), "/nonexistent", []))

    def test_429s_are_allowed_in_open_runs_only(self):
        refused = [outcome(0, 1), outcome(0, 0.1, kind="429")]
        self.assertEqual(report.failures([run_of(refused, "open", "1 req/s")], []), [])
        self.assertTrue(report.failures([run_of(refused, "closed")], []))


class _Args:
    seed, max_tokens, sampler, temperature, capacity = 1, [32], "dual_cache+threshold", 0.0, 0


class DocTest(unittest.TestCase):
    def test_the_section_is_replaced_and_the_rest_kept(self):
        with tempfile.TemporaryDirectory() as d:
            doc = os.path.join(d, "b.md")
            with open(doc, "w") as f:
                f.write("# B\n\n<!-- bench:serving -->\nold\n<!-- /bench:serving -->\n\n## After\n")
            report.write_doc(doc, "new\n")
            with open(doc) as f:
                self.assertEqual(f.read(), "# B\n\n<!-- bench:serving -->\nnew\n<!-- /bench:serving -->\n\n## After\n")

    def test_a_doc_without_the_section_gets_it_at_the_end(self):
        with tempfile.TemporaryDirectory() as d:
            doc = os.path.join(d, "b.md")
            with open(doc, "w") as f:
                f.write("# B\n")
            report.write_doc(doc, "body\n")
            with open(doc) as f:
                text = f.read()
            self.assertIn("## Serving", text)
            self.assertTrue(text.endswith("<!-- bench:serving -->\nbody\n<!-- /bench:serving -->\n"))


if __name__ == "__main__":
    unittest.main()
