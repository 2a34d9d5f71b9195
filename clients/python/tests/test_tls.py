"""The Python client over TLS against a scheduler that requires client certificates (mutual
TLS), started by tests/python_client/python_client_driver with certificates that openssl made
for the run."""

import os
import tempfile
import unittest

import grpc

from unmask_client import Client, UnmaskError
from unmask_client.client import tls_channel

UNDER_DRIVER = bool(os.environ.get("UNMASK_SCHEDULER", ""))
TARGET = os.environ.get("UNMASK_TLS_SCHEDULER", "")
CA = os.environ.get("UNMASK_TLS_CA", "")
CERT = os.environ.get("UNMASK_TLS_CERT", "")
KEY = os.environ.get("UNMASK_TLS_KEY", "")
OTHER_CERT = os.environ.get("UNMASK_TLS_OTHER_CERT", "")
OTHER_KEY = os.environ.get("UNMASK_TLS_OTHER_KEY", "")
MODEL = os.environ.get("UNMASK_MODEL", "unmask-kjv")
SHORT = dict(gen_length=16, block_length=16, steps=16)


@unittest.skipUnless(UNDER_DRIVER, "needs the stack of python_client_driver")
class ClientOverMutualTlsTest(unittest.TestCase):
    def setUp(self):
        for name, value in (("UNMASK_TLS_SCHEDULER", TARGET), ("UNMASK_TLS_CA", CA), ("UNMASK_TLS_CERT", CERT),
                            ("UNMASK_TLS_KEY", KEY), ("UNMASK_TLS_OTHER_CERT", OTHER_CERT),
                            ("UNMASK_TLS_OTHER_KEY", OTHER_KEY)):
            self.assertTrue(value, f"the driver must set {name}")

    def assert_refused(self, client):
        with client:
            with self.assertRaises(UnmaskError) as caught:
                client.models()
        self.assertEqual(caught.exception.code, grpc.StatusCode.UNAVAILABLE, caught.exception)

    def test_generate_with_a_client_certificate(self):
        with Client(TARGET, timeout=300, tls_ca=CA, tls_cert=CERT, tls_key=KEY) as c:
            self.assertIn(MODEL, c.models())
            r = c.generate("And God said unto Moses,", model=MODEL, **SHORT)
        self.assertTrue(r.text.strip(), r)
        self.assertEqual(r.steps_run, 16)

    def test_a_channel_of_its_own_with_the_server_name(self):
        channel = tls_channel(TARGET.replace("127.0.0.1", "localhost"), tls_ca=CA, tls_cert=CERT, tls_key=KEY,
                              tls_server_name="localhost")
        with Client(channel=channel, timeout=60) as c:
            self.assertIn(MODEL, c.models())

    def test_clients_without_the_right_certificate_are_refused(self):
        self.assert_refused(Client(TARGET, timeout=30, tls_ca=CA))  # no client certificate
        self.assert_refused(Client(TARGET, timeout=30, tls_ca=CA, tls_cert=OTHER_CERT, tls_key=OTHER_KEY))
        self.assert_refused(Client(TARGET, timeout=30))  # plaintext
        # A server name the certificate does not carry.
        self.assert_refused(Client(TARGET, timeout=30, tls_ca=CA, tls_cert=CERT, tls_key=KEY,
                                   tls_server_name="scheduler.example"))
        # The scheduler still serves clients that have one.
        with Client(TARGET, timeout=60, tls_ca=CA, tls_cert=CERT, tls_key=KEY) as c:
            self.assertIn(MODEL, c.models())

    def test_bad_tls_arguments_name_the_argument_and_file(self):
        with self.assertRaisesRegex(ValueError, "tls_cert and tls_key"):
            Client(TARGET, tls_ca=CA, tls_cert=CERT)
        missing = os.path.join(os.path.dirname(CA), "missing.crt")
        with self.assertRaisesRegex(ValueError, "tls_ca %s: cannot read it" % missing):
            Client(TARGET, tls_ca=missing)
        with tempfile.NamedTemporaryFile(suffix=".key") as garbage:
            garbage.write(b"not a key\n")
            garbage.flush()
            with self.assertRaisesRegex(ValueError, "tls_key %s: no PEM block" % garbage.name):
                Client(TARGET, tls_cert=CERT, tls_key=garbage.name)
        with self.assertRaisesRegex(ValueError, "channel: give either"):
            Client(TARGET, channel=grpc.insecure_channel(TARGET), tls=True)


if __name__ == "__main__":
    unittest.main()
