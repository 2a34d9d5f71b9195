"""The Monte Carlo log-likelihood of a continuation (Client.loglikelihood, params.likelihood)
through the Python client, against the real services (started by
tests/python_client/python_client_driver) serving models/unmask-kjv."""

import os
import unittest

import grpc

from unmask_client import Client, Likelihood, Result, UnmaskError
from unmask_client.client import build_request

TARGET = os.environ.get("UNMASK_SCHEDULER", "")
KEY = os.environ.get("UNMASK_API_KEY", "")
MODEL = os.environ.get("UNMASK_MODEL", "unmask-kjv")

CONTEXT = "In the beginning God created the heaven"
CONTINUATION = " and the earth."


class BuildLikelihoodRequestTest(unittest.TestCase):
    """The request the client sends, without a server."""

    def test_the_likelihood_message_is_present_even_with_every_default(self):
        r = build_request("m", CONTEXT, continuation=CONTINUATION, likelihood={})
        self.assertTrue(r.params.HasField("likelihood"))
        self.assertEqual(r.continuation, CONTINUATION)
        self.assertEqual(r.params.likelihood.mc_num, 0)
        self.assertFalse(r.params.HasField("gen_length"))

    def test_likelihood_fields_and_types(self):
        r = build_request("m", ids=[5, 6, 7], likelihood={"continuation_tokens": 2, "mc_num": 8, "batch_size": 4,
                                                          "check_greedy": True})
        l = r.params.likelihood
        self.assertEqual((l.continuation_tokens, l.mc_num, l.batch_size, l.check_greedy), (2, 8, 4, True))
        for bad in ({"mc_num": "8"}, {"mc_num": True}, {"batch_size": 2.0}, {"check_greedy": 1}, {"samples": 8}):
            with self.assertRaises(TypeError, msg=bad):
                build_request("m", "x", continuation="y", likelihood=bad)
        with self.assertRaises(TypeError):
            build_request("m", "x", continuation="y", likelihood=8)
        with self.assertRaises(TypeError):
            build_request("m", "x", continuation=3)

    def test_the_client_refuses_bad_types_before_any_call(self):
        # No server behind this address: a TypeError comes before any call is made.
        with Client("127.0.0.1:1", timeout=1) as c:
            with self.assertRaises(TypeError):
                c.loglikelihood(CONTEXT, None, model=MODEL)
            with self.assertRaises(TypeError):
                c.loglikelihood(CONTEXT, CONTINUATION, model=MODEL, mc_num="8")
            with self.assertRaises(TypeError):
                c.loglikelihood(CONTEXT, CONTINUATION, model=MODEL, mc_num=True)
            with self.assertRaises(TypeError):
                c.loglikelihood(CONTEXT, CONTINUATION, model=MODEL, check_greedy="yes")
            with self.assertRaises(TypeError):
                c.loglikelihood([1, 2], CONTINUATION, model=MODEL)
            with self.assertRaises(TypeError):
                c.loglikelihood_ids([1, 2, 3], True, model=MODEL)
            with self.assertRaises(TypeError):
                c.loglikelihood_ids("1 2 3", 1, model=MODEL)


@unittest.skipUnless(TARGET, "needs the stack of python_client_driver")
class LikelihoodAgainstTheStackTest(unittest.TestCase):
    def setUp(self):
        self.client = Client(TARGET, api_key=KEY, timeout=300)

    def tearDown(self):
        self.client.close()

    def estimate(self, continuation=CONTINUATION, context=CONTEXT, **params):
        params.setdefault("mc_num", 8)
        params.setdefault("batch_size", 4)
        params.setdefault("seed", 1)
        return self.client.loglikelihood(context, continuation, model=MODEL, **params)

    def assertRefused(self, field, call):
        with self.assertRaises(UnmaskError) as e:
            call()
        self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT, e.exception)
        self.assertIn(field, e.exception.message)

    def test_the_estimate_and_nothing_generated(self):
        r = self.estimate()
        self.assertIsInstance(r, Result)
        self.assertIsInstance(r.likelihood, Likelihood)
        self.assertLess(r.likelihood.loglikelihood, 0)
        self.assertGreaterEqual(r.likelihood.standard_error, 0)
        self.assertEqual(r.likelihood.samples, 8)
        self.assertGreaterEqual(r.likelihood.continuation_tokens, 3)
        self.assertIsNone(r.likelihood.greedy)  # not asked for
        self.assertEqual(r.text, "")
        self.assertEqual(r.ids, [])
        self.assertEqual(r.steps_run, 0)
        self.assertTrue(r.accepted.params["likelihood"])

    def test_the_stored_job_keeps_the_estimate(self):
        r = self.estimate()
        job = self.client.job(r.job_id)
        self.assertEqual(job.state, "succeeded")
        self.assertEqual(job.result.likelihood, r.likelihood)

    def test_the_server_defaults_apply_when_nothing_is_given(self):
        r = self.client.loglikelihood(CONTEXT, CONTINUATION, model=MODEL, seed=1)
        self.assertEqual(r.likelihood.samples, 128)  # mc_num 0 = 128
        self.assertLess(r.likelihood.loglikelihood, 0)

    def test_the_seed_decides_the_draws(self):
        a, b = self.estimate(seed=1), self.estimate(seed=1)
        self.assertEqual(a.likelihood.loglikelihood, b.likelihood.loglikelihood)
        self.assertEqual(a.likelihood.standard_error, b.likelihood.standard_error)
        c = self.estimate(seed=2)
        self.assertNotEqual(a.likelihood.loglikelihood, c.likelihood.loglikelihood)

    def test_a_draw_runs_in_one_forward_or_as_many_as_asked(self):
        all_rows = self.estimate()  # mc_num 8, batch_size 4: the scheduler fits the draw's 4
        self.assertEqual((all_rows.likelihood.rows_per_forward, all_rows.likelihood.forwards), (4, 2))
        one = self.estimate(rows_per_forward=1)
        self.assertEqual((one.likelihood.rows_per_forward, one.likelihood.forwards), (1, 8))
        self.assertAlmostEqual(one.likelihood.loglikelihood, all_rows.likelihood.loglikelihood,
                               delta=1e-5 * abs(all_rows.likelihood.loglikelihood))

    def test_check_greedy(self):
        r = self.estimate(check_greedy=True)
        self.assertIsInstance(r.likelihood.greedy, bool)
        self.assertLess(r.likelihood.loglikelihood, 0)

    def test_the_true_continuation_scores_higher_than_its_words_scrambled(self):
        true = self.estimate(mc_num=32, batch_size=8, seed=7)
        scrambled = self.estimate(" earth the and.", mc_num=32, batch_size=8, seed=7)
        self.assertGreater(true.likelihood.loglikelihood, scrambled.likelihood.loglikelihood,
                           (true.likelihood, scrambled.likelihood))

    def test_ids_give_the_estimate_of_the_same_text(self):
        # No tokenize call: the prompt's ids come back as prompt_logprobs (from the second token
        # on), so the text starts with a special token whose id is known (<|startoftext|> = 1).
        context = "<|startoftext|>" + CONTEXT
        text = self.estimate(context=context, prompt_logprobs=0)
        ids = [1] + [e.token for e in text.prompt_logprobs]
        self.assertEqual([e.position for e in text.prompt_logprobs], list(range(1, len(ids))))
        n = text.likelihood.continuation_tokens
        r = self.client.loglikelihood_ids(ids, n, model=MODEL, mc_num=8, batch_size=4, seed=1)
        self.assertEqual(r.likelihood.continuation_tokens, n)
        self.assertEqual(r.likelihood.samples, 8)
        self.assertEqual(r.likelihood.loglikelihood, text.likelihood.loglikelihood)
        self.assertEqual(r.text, "")
        self.assertEqual(r.ids, [])

    def test_ids_take_the_count_given(self):
        r = self.client.loglikelihood_ids([300, 301, 302, 303, 304, 305], 2, model=MODEL, mc_num=4, batch_size=2, seed=3)
        self.assertEqual(r.likelihood.continuation_tokens, 2)
        self.assertEqual(r.likelihood.samples, 4)
        self.assertLess(r.likelihood.loglikelihood, 0)

    def test_submit_and_watch_a_likelihood_job(self):
        a = self.client.submit(CONTEXT, model=MODEL, continuation=CONTINUATION,
                               likelihood={"mc_num": 8, "batch_size": 4}, seed=1)
        with self.client.watch(a.job_id) as s:
            self.assertEqual(list(s), [])  # no steps
            self.assertEqual(s.result.likelihood, self.estimate().likelihood)

    def test_score_only_scores_the_prompt_and_generates_nothing(self):
        with self.client.stream(CONTEXT, model=MODEL, prompt_logprobs=1, score_only=True) as s:
            self.assertEqual(list(s), [])  # no steps
        r = s.result
        self.assertEqual(r.ids, [])
        self.assertEqual(r.steps_run, 0)
        self.assertEqual([e.position for e in r.prompt_logprobs], list(range(1, r.accepted.prompt_tokens)))
        scored = self.client.generate(CONTEXT, model=MODEL, gen_length=1, block_length=1, steps=1, prompt_logprobs=1)
        self.assertEqual([e.logprob for e in r.prompt_logprobs], [e.logprob for e in scored.prompt_logprobs])
        self.assertRefused("params.score_only", lambda: self.client.generate(CONTEXT, model=MODEL, score_only=True))
        self.assertRefused("params.gen_length", lambda: self.client.generate(
            CONTEXT, model=MODEL, prompt_logprobs=1, score_only=True, gen_length=4))

    def test_bad_values_are_refused_by_name(self):
        self.assertRefused("params.likelihood.batch_size", lambda: self.estimate(mc_num=10, batch_size=4))
        self.assertRefused("continuation", lambda: self.estimate(""))
        self.assertRefused("params.gen_length", lambda: self.estimate(gen_length=8))
        self.assertRefused("params.likelihood.continuation_tokens",
                           lambda: self.client.loglikelihood_ids([300, 301, 302], 4, model=MODEL))
        self.assertRefused("params.likelihood", lambda: self.client.chat(
            [("user", "In the beginning")], model=MODEL, continuation=CONTINUATION, likelihood={}))
        self.assertRefused("params.logprobs", lambda: self.estimate(logprobs=2))
        self.assertRefused("params.likelihood.rows_per_forward", lambda: self.estimate(rows_per_forward=5))
        self.assertRefused("params.likelihood.rows_per_forward", lambda: self.estimate(rows_per_forward=-1))


if __name__ == "__main__":
    unittest.main()
