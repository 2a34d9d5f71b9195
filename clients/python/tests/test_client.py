"""The Python client against the real services (started by tests/python_client/python_client_driver)."""

import os
import time
import unittest

import grpc

from unmask_client import Client, Result, Step, UnmaskError
from unmask_client.client import build_request

TARGET = os.environ.get("UNMASK_SCHEDULER", "")
KEY = os.environ.get("UNMASK_API_KEY", "")
LIMITED_KEY = os.environ.get("UNMASK_LIMITED_KEY", "")
MODEL = os.environ.get("UNMASK_MODEL", "unmask-kjv")
SHORT = dict(gen_length=16, block_length=16, steps=16)
LONG = dict(gen_length=512, block_length=32, steps=512)  # long enough to cancel while it runs


def wait_terminal(client, job_id, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job = client.job(job_id)
        if job.state not in ("queued", "running"):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} still {job.state} after {seconds} s")


@unittest.skipUnless(TARGET, "needs the stack of python_client_driver")
class ClientAgainstTheStackTest(unittest.TestCase):
    def setUp(self):
        self.client = Client(TARGET, api_key=KEY, timeout=300)

    def tearDown(self):
        self.client.close()

    def test_generate_returns_the_text_and_finish_reason(self):
        r = self.client.generate("And God said unto Moses,", model=MODEL, **SHORT)
        self.assertIsInstance(r, Result)
        self.assertIsInstance(r.text, str)
        self.assertTrue(r.text.strip(), r)
        self.assertIn(r.finish_reason, ("length", "eos", "stop"))
        self.assertEqual(r.accepted.params["gen_length"], 16)
        self.assertEqual(r.accepted.params["remasking"], "low_confidence")  # the name build_request takes
        self.assertEqual(r.steps_run, 16)
        self.assertEqual(self.client.job(r.job_id).state, "succeeded")
        self.assertEqual(self.client.job(r.job_id).result.text, r.text)

    def test_the_same_seed_gives_the_same_text(self):
        a = self.client.generate("In the beginning", model=MODEL, temperature=0.7, seed=7, **SHORT)
        b = self.client.generate("In the beginning", model=MODEL, temperature=0.7, seed=7, **SHORT)
        self.assertEqual(a.ids, b.ids)

    def test_choices_are_the_requests_with_seeds_seed_to_seed_plus_n_minus_one(self):
        results = self.client.choices("In the beginning", model=MODEL, n=3, temperature=0.7, seed=30, **SHORT)
        self.assertEqual(len(results), 3)
        self.assertEqual([r.accepted.params["seed"] for r in results], [30, 31, 32])
        self.assertEqual(results[0].accepted.job_ids, [r.job_id for r in results])
        for i, r in enumerate(results):
            single = self.client.generate("In the beginning", model=MODEL, temperature=0.7, seed=30 + i, **SHORT)
            self.assertEqual(r.ids, single.ids, f"choice {i}")
        with self.assertRaises(UnmaskError) as refused:
            self.client.choices("In the beginning", model=MODEL, n=17, **SHORT)
        self.assertEqual(refused.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("n: must be in [0, 16]", refused.exception.message)

    def test_stream_yields_each_diffusion_step(self):
        with self.client.stream("And God said unto Moses,", model=MODEL, partial_text=True, **SHORT) as s:
            steps = list(s)
        self.assertEqual([st.step for st in steps], list(range(16)))
        self.assertTrue(all(isinstance(st, Step) for st in steps))
        positions = sorted(p for st in steps for p in st.positions)
        self.assertEqual(positions, list(range(16)))  # every position unmasked exactly once
        self.assertEqual([len(st.tokens) for st in steps], [len(st.positions) for st in steps])
        self.assertIn("_", steps[0].partial_text)
        self.assertIsNotNone(s.result)
        self.assertEqual(s.result.job_id, s.job_id)

    def test_chat_uses_the_chat_template(self):
        r = self.client.chat([{"role": "user", "content": "What does John 3:16 say?"}], model=MODEL,
                             gen_length=32, block_length=32, steps=32)
        self.assertIn(r.finish_reason, ("length", "eos", "stop"))
        self.assertGreater(r.accepted.prompt_tokens, 8)  # the template's special tokens around the question

    def test_cancel_ends_a_running_job(self):
        accepted = self.client.submit("And God said unto Moses,", model=MODEL, **LONG)
        deadline = time.monotonic() + 60
        while self.client.job(accepted.job_id).state == "queued" and time.monotonic() < deadline:
            time.sleep(0.05)
        self.client.cancel(accepted.job_id)
        job = wait_terminal(self.client, accepted.job_id)
        self.assertEqual(job.state, "cancelled")
        self.assertIsNone(job.result)

    def test_watch_replays_a_finished_job(self):
        accepted = self.client.submit(ids=[1, 2, 3], model=MODEL, **SHORT)
        result = self.client.watch(accepted.job_id).wait()
        self.assertEqual(result.job_id, accepted.job_id)

    def test_models_lists_the_served_model(self):
        self.assertIn(MODEL, self.client.models())


@unittest.skipUnless(TARGET, "needs the stack of python_client_driver")
class ApiKeyTest(unittest.TestCase):
    def test_no_key_is_unauthenticated(self):
        with Client(TARGET) as c:
            with self.assertRaises(UnmaskError) as e:
                c.models()
            self.assertEqual(e.exception.code, grpc.StatusCode.UNAUTHENTICATED)
            with self.assertRaises(UnmaskError) as e:
                c.generate("x", model=MODEL, **SHORT)
            self.assertEqual(e.exception.code, grpc.StatusCode.UNAUTHENTICATED)

    def test_a_wrong_key_is_unauthenticated(self):
        with Client(TARGET, api_key=KEY + "x") as c:
            with self.assertRaises(UnmaskError) as e:
                c.submit("x", model=MODEL, **SHORT)
            self.assertEqual(e.exception.code, grpc.StatusCode.UNAUTHENTICATED)
            self.assertIn("not valid", e.exception.message)

    def test_the_right_key_is_accepted(self):
        with Client(TARGET, api_key=KEY) as c:
            self.assertIn(MODEL, c.models())

    def test_a_key_at_its_job_limit_is_refused_naming_it(self):
        with Client(TARGET, api_key=LIMITED_KEY) as c:
            first = c.submit("And God said unto Moses,", model=MODEL, **LONG)
            try:
                with self.assertRaises(UnmaskError) as e:
                    c.submit("And God said unto Moses,", model=MODEL, **SHORT)
                self.assertEqual(e.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
                self.assertIn("max_queued_jobs=1", e.exception.message)
            finally:
                c.cancel(first.job_id)
            wait_terminal(c, first.job_id)
            self.assertEqual(c.generate("Amen", model=MODEL, **SHORT).finish_reason in ("length", "eos", "stop"), True)


class BadInputTest(unittest.TestCase):
    """Refused in the client before any call (no server needed), or by the server naming the field."""

    def test_exactly_one_prompt(self):
        with self.assertRaisesRegex(TypeError, "exactly one of prompt, chat, ids"):
            build_request("m")
        with self.assertRaisesRegex(TypeError, "exactly one of prompt, chat, ids"):
            build_request("m", "text", ids=[1])

    def test_unknown_and_mistyped_parameters(self):
        with self.assertRaisesRegex(TypeError, "unknown parameter 'max_tokens'"):
            build_request("m", "x", max_tokens=5)
        with self.assertRaisesRegex(TypeError, "^gen_length: "):
            build_request("m", "x", gen_length="sixteen")
        with self.assertRaisesRegex(TypeError, "^remasking: 'lowest'"):
            build_request("m", "x", remasking="lowest")
        with self.assertRaisesRegex(TypeError, "^priority: "):
            build_request("m", "x", priority=1.5)
        with self.assertRaisesRegex(TypeError, "model"):
            build_request("", "x")
        with self.assertRaisesRegex(TypeError, "prompt: a string"):
            build_request("m", [1, 2])

    def test_bad_chat_messages(self):
        with self.assertRaisesRegex(TypeError, "not a string"):
            build_request("m", chat="hello")
        with self.assertRaisesRegex(TypeError, "unknown keys"):
            build_request("m", chat=[{"role": "user", "text": "hi"}])
        with self.assertRaisesRegex(TypeError, r"\(role, content\)"):
            build_request("m", chat=[("user", "hi", "extra")])
        with self.assertRaisesRegex(TypeError, "at least one message"):
            build_request("m", chat=[])

    def test_tools_and_tool_turns_reach_the_request(self):
        tools = [{"type": "function", "function": {"name": "get_verse", "description": "A verse",
                                                   "parameters": {"type": "object", "properties": {"ref": {"type": "string"}}}}}]
        chat = [{"role": "user", "content": "John 3:16?"},
                {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_verse", "arguments": {"ref": "John 3:16"}}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "For God so loved the world"}]
        r = build_request("m", chat=chat, tools=tools, tool_choice="get_verse", parallel_tool_calls=False)
        self.assertEqual(r.chat.messages[1].content, "")
        self.assertEqual(r.chat.messages[1].tool_calls[0].name, "get_verse")
        self.assertEqual(r.chat.messages[1].tool_calls[0].arguments, '{"ref": "John 3:16"}')
        self.assertEqual(r.chat.messages[2].tool_call_id, "c1")
        self.assertEqual(r.chat.tools[0].name, "get_verse")
        self.assertEqual(r.chat.tools[0].parameters, '{"type": "object", "properties": {"ref": {"type": "string"}}}')
        self.assertEqual(r.chat.tool_choice, "get_verse")
        self.assertTrue(r.chat.single_tool_call)
        self.assertEqual(len(build_request("m", chat=chat[:1]).chat.tools), 0)

    def test_bad_tools(self):
        tools = [{"type": "function", "function": {"name": "f"}}]
        with self.assertRaisesRegex(TypeError, "go with chat"):
            build_request("m", "x", tools=tools)
        with self.assertRaisesRegex(TypeError, "tools: each is"):
            build_request("m", chat=[("user", "x")], tools=[{"name": "f"}])
        with self.assertRaisesRegex(TypeError, "tools parameters"):
            build_request("m", chat=[("user", "x")], tools=[{"type": "function", "function": {"name": "f", "parameters": 5}}])
        with self.assertRaisesRegex(TypeError, "tool_choice"):
            build_request("m", chat=[("user", "x")], tools=tools, tool_choice={"type": "function"})
        with self.assertRaisesRegex(TypeError, "tool_calls: each is"):
            build_request("m", chat=[{"role": "assistant", "tool_calls": ["f()"]}, ("user", "x")])

    def test_bad_ids(self):
        with self.assertRaises(TypeError):
            build_request("m", ids=["a"])
        with self.assertRaisesRegex(TypeError, "at least one token id"):
            build_request("m", ids=[])

    def test_parameters_reach_the_request(self):
        r = build_request("m", "x", gen_length=8, remasking="random", sampler="dual_cache", priority=3,
                          idempotency_key="k", seed=None)
        self.assertEqual(r.params.gen_length, 8)
        self.assertEqual(r.params.remasking, 2)
        self.assertEqual(r.params.sampler, "dual_cache")
        self.assertEqual(r.priority, 3)
        self.assertFalse(r.params.HasField("steps"))
        # Every GenerationParams field is a keyword, early_stop (an optional bool) included.
        self.assertFalse(build_request("m", "x").params.HasField("early_stop"))
        self.assertTrue(build_request("m", "x", early_stop=False).params.HasField("early_stop"))
        with self.assertRaisesRegex(TypeError, "^early_stop: "):
            build_request("m", "x", early_stop="no")

    def test_bad_api_key(self):
        for key in ("", "two words", 5):
            with self.assertRaises(ValueError):
                Client("127.0.0.1:1", api_key=key)

    @unittest.skipUnless(TARGET, "needs the stack of python_client_driver")
    def test_the_server_names_a_bad_value(self):
        with Client(TARGET, api_key=KEY) as c:
            with self.assertRaises(UnmaskError) as e:
                c.generate("x", model=MODEL, gen_length=16, block_length=16, steps=17)
            self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("steps", e.exception.message)
            with self.assertRaises(UnmaskError) as e:
                c.job("no-such-job")
            self.assertEqual(e.exception.code, grpc.StatusCode.NOT_FOUND)
            with self.assertRaises(ValueError):
                c.watch("")

    @unittest.skipUnless(TARGET, "needs the stack of python_client_driver")
    def test_a_model_without_a_place_for_tools_refuses_them(self):
        tools = [{"type": "function", "function": {"name": "get_verse"}}]
        with Client(TARGET, api_key=KEY) as c:
            with self.assertRaises(UnmaskError) as e:
                c.chat([("user", "John 3:16?")], model=MODEL, tools=tools, **SHORT)
            self.assertEqual(e.exception.code, grpc.StatusCode.FAILED_PRECONDITION)
            self.assertIn("takes no tools", e.exception.message)
            r = c.chat([("user", "John 3:16?")], model=MODEL, tools=tools, tool_choice="none", **SHORT)
            self.assertEqual(r.tool_calls, [])
            with self.assertRaises(UnmaskError) as e:
                c.chat([("user", "John 3:16?")], model=MODEL, tools=tools, tool_choice="get_psalm", **SHORT)
            self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("chat.tool_choice", e.exception.message)


if __name__ == "__main__":
    unittest.main()
