"""Tests of gavel_iterator.py against a scripted fake agent (an HTTP server on loopback).

Run: python3 -m unittest discover -s python/tests   (python/ on PYTHONPATH, or from python/)
"""

import http.server
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import unittest

sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import gavel_iterator  # noqa: E402
from gavel_iterator import AgentError, CheckpointError, CheckpointStore, GavelIterator, Lease  # noqa: E402


class FakeAgent:
    """Answers the iterator protocol from a script; records every call.

    `leases` is the list of leases handed out in order: Init gets the first, each
    Done(LEASE_REACHED) the next one (continueRunning) until the list runs out (then the job is
    told to stop). 64-bit integers are sent as strings, as proto3 JSON does."""

    def __init__(self, total_steps, leases, token=None, progress_lease=None):
        self.total_steps = total_steps
        self.leases = list(leases)
        self.token = token
        self.progress_lease = progress_lease  # a lease Progress starts returning, once set
        self.current = (0, 0)
        self.calls = []
        agent = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                method = self.path.rsplit("/", 1)[-1]
                request = json.loads(body or b"{}")
                agent.calls.append((method, request, self.headers.get("Authorization")))
                if agent.token and self.headers.get("Authorization") != "Bearer " + agent.token:
                    return self._send(401, {"error": "missing or wrong token"})
                if request.get("jobId") not in (7, "7"):
                    return self._send(404, {"error": "this agent runs no job %s" % request.get("jobId")})
                self._send(200, agent.answer(method, request))

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @staticmethod
    def lease_json(lease):
        stop, duration = lease[:2]
        value = {"stopAtStep": str(stop), "maxDurationS": duration if duration != float("inf") else "Infinity",
                 "roundEndUnixMs": "0"}
        if len(lease) > 2:
            value["stepBoundOnly"] = lease[2]  # a gang lease (multi-GPU jobs)
        return value

    def answer(self, method, request):
        if method == "Init":
            self.current = self.leases.pop(0)
            return {"lease": self.lease_json(self.current), "totalSteps": str(self.total_steps),
                    "holdTimeoutS": 5}
        if method == "Progress":
            lease = self.progress_lease or self.current
            return {"lease": self.lease_json(lease)}
        if method == "Done":
            if request["reason"] == "LEASE_REACHED" and self.leases:
                self.current = self.leases.pop(0)
                return {"continueRunning": True, "lease": self.lease_json(self.current), "roundId": "9"}
            return {"continueRunning": False, "lease": self.lease_json((0, 0)), "roundId": "0"}
        raise AssertionError(method)

    def calls_of(self, method):
        return [request for name, request, _ in self.calls if name == method]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Model:
    """The training program's model: a step counter and an order-sensitive checksum."""

    def __init__(self):
        self.state = {"step": 0, "checksum": 0}
        self.saves = []
        self.loads = []

    def save(self, directory):
        self.saves.append(directory)
        with open(os.path.join(directory, "model.json"), "w") as f:
            json.dump(self.state, f)

    def load(self, directory):
        self.loads.append(directory)
        with open(os.path.join(directory, "model.json")) as f:
            self.state = json.load(f)

    def step(self):
        self.state["checksum"] = (self.state["checksum"] * 1000003 + self.state["step"] + 1) % ((1 << 61) - 1)
        self.state["step"] += 1


def expected_checksum(n):
    checksum = 0
    for k in range(n):
        checksum = (checksum * 1000003 + k + 1) % ((1 << 61) - 1)
    return checksum


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class IteratorTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gavel_iterator_test_")
        self.ckpt = os.path.join(self.dir, "job-7")
        self.agents = []
        self.logs = []

    def tearDown(self):
        for agent in self.agents:
            agent.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def agent(self, total_steps, leases, **kwargs):
        agent = FakeAgent(total_steps, leases, **kwargs)
        self.agents.append(agent)
        return agent

    def env(self, agent, **extra):
        env = {"GAVEL_AGENT_URL": agent.url, "GAVEL_JOB_ID": "7", "GAVEL_WORKER_ID": "3",
               "GAVEL_ROUND_ID": "1", "GAVEL_CHECKPOINT_DIR": self.ckpt}
        env.update(extra)
        return env

    def run_loop(self, iterator, model, max_steps=10000, clock=None, step_seconds=0.0):
        seen = []
        for _ in iterator:
            self.assertEqual(model.state["step"], iterator.steps_done)
            seen.append(iterator.steps_done)
            model.step()
            if clock is not None:
                clock.now += step_seconds
            self.assertLess(len(seen), max_steps)
        return seen

    def make(self, agent, model, **kwargs):
        return GavelIterator(range(3), model.save, model.load, env=self.env(agent),
                             log=self.logs.append, handle_sigterm=False, **kwargs)

    def test_runs_to_the_lease_then_checkpoints_and_stops(self):
        agent = self.agent(100, [(5, float("inf"))])
        model = Model()
        it = self.make(agent, model)
        self.assertEqual(it.lease, Lease(5, float("inf")))
        self.assertEqual(it.total_steps, 100)
        self.assertEqual(self.run_loop(it, model), [0, 1, 2, 3, 4])
        self.assertEqual(it.steps_done, 5)
        self.assertFalse(it.completed)
        self.assertEqual(len(model.saves), 1)
        init = agent.calls_of("Init")[0]
        self.assertEqual(init, {"jobId": 7, "workerId": 3, "roundId": 1, "restoredSteps": 0})
        done = agent.calls_of("Done")
        self.assertEqual(len(done), 1)
        self.assertEqual(done[0]["reason"], "LEASE_REACHED")
        self.assertEqual(done[0]["checkpointedSteps"], 5)
        self.assertEqual(done[0]["stepsTrained"], 5)
        self.assertEqual(CheckpointStore(self.ckpt).latest()[1], 5)
        with open(os.path.join(self.ckpt, "LATEST")) as f:
            self.assertEqual(f.read().strip(), "ckpt-000000000005")
        self.assertEqual(sorted(os.listdir(self.ckpt)), ["LATEST", "ckpt-000000000005"])
        # A finished iterator stays finished.
        self.assertEqual(list(it), [])

    def test_restores_and_continues_from_the_checkpoint(self):
        model = Model()
        self.run_loop(self.make(self.agent(100, [(5, float("inf"))]), model), model)
        fresh = Model()
        agent = self.agent(100, [(12, float("inf"))])
        it = self.make(agent, fresh)
        self.assertEqual(len(fresh.loads), 1)
        self.assertTrue(fresh.loads[0].endswith("ckpt-000000000005"))
        self.assertEqual(it.steps_done, 5)
        self.assertEqual(agent.calls_of("Init")[0]["restoredSteps"], 5)
        self.assertEqual(self.run_loop(it, fresh), list(range(5, 12)))
        self.assertEqual(fresh.state["step"], 12)
        self.assertEqual(fresh.state["checksum"], expected_checksum(12))
        self.assertEqual(sorted(os.listdir(self.ckpt)), ["LATEST", "ckpt-000000000012"])

    def test_continues_without_restart_when_the_lease_is_extended(self):
        agent = self.agent(100, [(4, float("inf")), (9, float("inf"))])
        model = Model()
        it = self.make(agent, model)
        self.assertEqual(self.run_loop(it, model), list(range(9)))
        done = agent.calls_of("Done")
        self.assertEqual([d["checkpointedSteps"] for d in done], [4, 9])
        self.assertEqual(done[1]["roundId"], 9)  # the round of the extension
        self.assertEqual(done[1]["stepsTrained"], 5)
        self.assertEqual(len(model.saves), 2)

    def test_completes_exactly_at_the_total_steps(self):
        agent = self.agent(7, [(100, float("inf"))])
        model = Model()
        it = self.make(agent, model)
        self.assertEqual(self.run_loop(it, model), list(range(7)))
        self.assertTrue(it.completed)
        done = agent.calls_of("Done")
        self.assertEqual(len(done), 1)
        self.assertEqual(done[0]["reason"], "COMPLETE")
        self.assertEqual(done[0]["checkpointedSteps"], 7)
        self.assertEqual(model.state["checksum"], expected_checksum(7))

    def test_a_restored_complete_job_runs_no_step(self):
        model = Model()
        self.run_loop(self.make(self.agent(3, [(100, float("inf"))]), model), model)
        again = Model()
        agent = self.agent(3, [(100, float("inf"))])
        it = self.make(agent, again)
        self.assertEqual(self.run_loop(it, again), [])
        self.assertTrue(it.completed)
        self.assertEqual(agent.calls_of("Done")[0]["checkpointedSteps"], 3)
        self.assertEqual(again.saves, [])  # nothing new to save

    def test_time_bounded_lease(self):
        clock = FakeClock()
        agent = self.agent(1000, [(1000, 1.0)])
        model = Model()
        it = self.make(agent, model, clock=clock)
        # Each step takes 0.25 s of training: the lease ends after 4.
        self.assertEqual(self.run_loop(it, model, clock=clock, step_seconds=0.25), [0, 1, 2, 3])
        done = agent.calls_of("Done")[0]
        self.assertEqual(done["checkpointedSteps"], 4)
        self.assertAlmostEqual(done["trainingSeconds"], 1.0)
        # Progress went out in between (every max(0.25, duration/8) s).
        self.assertGreaterEqual(len(agent.calls_of("Progress")), 1)

    def test_lease_update_through_progress_is_adopted(self):
        clock = FakeClock()
        agent = self.agent(1000, [(1000, 2.0)])
        agent.progress_lease = (6, 100.0)  # the scheduler extended the lease while we run
        model = Model()
        it = self.make(agent, model, clock=clock)
        self.assertEqual(self.run_loop(it, model, clock=clock, step_seconds=0.3), list(range(6)))
        self.assertEqual(it.lease, Lease(6, 100.0))

    def test_a_gang_lease_ends_at_its_step_whatever_the_clock(self):
        # A rank of a multi-GPU job must stop exactly where the others do: its lease's time
        # bound (long past here) does not end it, nor does a lease change through Progress;
        # the next lease comes at its Done.
        clock = FakeClock()
        agent = self.agent(1000, [(8, 1.0, True), (12, 1.0, True)])
        agent.progress_lease = (5, 1.0, True)
        model = Model()
        it = self.make(agent, model, clock=clock)
        self.assertTrue(it.lease.step_bound_only)
        self.assertEqual(self.run_loop(it, model, clock=clock, step_seconds=0.5), list(range(12)))
        self.assertEqual([d["checkpointedSteps"] for d in agent.calls_of("Done")], [8, 12])
        self.assertGreaterEqual(len(agent.calls_of("Progress")), 1)
        self.assertEqual(it.lease, Lease(12, 1.0, 0, True))

    def test_every_step_runs_exactly_once_across_a_crash(self):
        # Lease 1 ends at 5 (checkpoint); the process then crashes at step 8 without saving.
        agent = self.agent(20, [(5, float("inf")), (20, float("inf"))])
        model = Model()
        it = self.make(agent, model)
        executed = []
        for _ in it:
            if model.state["step"] == 8:
                break  # the crash: steps 5..7 ran but were never checkpointed
            executed.append(model.state["step"])
            model.step()
        self.assertEqual(CheckpointStore(self.ckpt).latest()[1], 5)
        # The next process restores at 5 and redoes 5..7.
        survivor = Model()
        it = self.make(self.agent(20, [(20, float("inf"))]), survivor)
        redone = self.run_loop(it, survivor)
        self.assertEqual(redone, list(range(5, 20)))
        self.assertTrue(it.completed)
        self.assertEqual(survivor.state["step"], 20)
        self.assertEqual(survivor.state["checksum"], expected_checksum(20))
        self.assertEqual(executed, list(range(8)))

    def test_a_save_that_fails_leaves_the_previous_checkpoint_current(self):
        model = Model()
        self.run_loop(self.make(self.agent(100, [(5, float("inf"))]), model), model)
        store = CheckpointStore(self.ckpt)

        def broken(directory):
            with open(os.path.join(directory, "model.json"), "w") as f:
                f.write("{half")
            raise OSError("disk full")

        with self.assertRaises(OSError):
            store.save(9, broken)
        directory, steps = store.latest()
        self.assertEqual(steps, 5)
        with open(os.path.join(directory, "model.json")) as f:
            self.assertEqual(json.load(f)["step"], 5)
        # The next good save removes the leftover staging directory.
        store.save(10, model.save)
        self.assertEqual(sorted(os.listdir(self.ckpt)), ["LATEST", "ckpt-000000000010"])

    def test_a_replaced_launch_can_neither_overwrite_nor_shrink_the_jobs_checkpoint(self):
        """The fence (docs/checkpointing.md): launch 0, replaced by launch 1 but still running,
        writes on in its own namespace only; the next launch continues launch 1's line."""
        def by(launch):
            def save(directory):
                with open(os.path.join(directory, "who"), "w") as f:
                    f.write(str(launch))
            return save

        def who(directory):
            with open(os.path.join(directory, "who")) as f:
                return int(f.read())

        zero = CheckpointStore(self.ckpt, 0)
        self.assertIsNone(zero.claim())
        zero.save(100, by(0))
        one = CheckpointStore(self.ckpt, 1)
        directory, steps = one.claim()
        self.assertEqual((steps, who(directory)), (100, 0))
        self.assertFalse(os.path.exists(CheckpointStore.namespace_of(self.ckpt, 0)))
        zero.save(120, by(0))
        one.save(150, by(1))
        zero.save(180, by(0))  # more steps than launch 1, but never credited
        self.assertEqual(one.latest()[1], 150)
        self.assertEqual(CheckpointStore(self.ckpt).latest()[1], 150)
        # The iterator of the next launch claims launch 1's line and refuses to begin below the
        # scheduler's count.
        agent = self.agent(160, [(160, float("inf"))])
        loaded = []
        it = GavelIterator(range(3), by(2), lambda d: loaded.append(who(d)), log=self.logs.append,
                           env=self.env(agent, GAVEL_ATTEMPT="2", GAVEL_CHECKPOINTED_STEPS="150"))
        self.assertEqual((it.steps_done, loaded), (150, [1]))
        self.assertFalse(os.path.exists(CheckpointStore.namespace_of(self.ckpt, 1)))
        with self.assertRaisesRegex(CheckpointError, "no checkpoint holds the 170 steps"):
            GavelIterator(range(3), by(3), lambda d: None, log=self.logs.append,
                          env=self.env(agent, GAVEL_ATTEMPT="3", GAVEL_CHECKPOINTED_STEPS="170"))

    def test_a_launch_replaced_in_the_middle_of_its_claim_leaves_the_checkpoint_to_the_next(self):
        """Launch 2 moved launch 1's checkpoint into its namespace but never wrote its LATEST
        when launch 3 started: launch 3 takes the checkpoint from there instead of removing it."""
        def save(directory):
            with open(os.path.join(directory, "model"), "w") as f:
                f.write("320")
        CheckpointStore(self.ckpt, 1).save(320, save)
        in_flight = CheckpointStore.namespace_of(self.ckpt, 2)
        os.makedirs(in_flight)
        os.rename(os.path.join(CheckpointStore.namespace_of(self.ckpt, 1), "ckpt-000000000320"),
                  os.path.join(in_flight, "ckpt-000000000320"))
        claimed = CheckpointStore(self.ckpt, 3).claim()
        self.assertIsNotNone(claimed, "the checkpoint in launch 2's namespace was lost")
        directory, steps = claimed
        self.assertEqual(steps, 320)
        self.assertIn("attempt-3", directory)
        with open(os.path.join(directory, "model")) as f:
            self.assertEqual(f.read(), "320")
        self.assertFalse(os.path.exists(in_flight))
        self.assertFalse(os.path.exists(CheckpointStore.namespace_of(self.ckpt, 1)))

    def test_a_corrupt_pointer_is_an_error_naming_the_file(self):
        os.makedirs(self.ckpt)
        with open(os.path.join(self.ckpt, "LATEST"), "w") as f:
            f.write("ckpt-000000000042\n")
        with self.assertRaisesRegex(CheckpointError, "gavel_iterator.json: unreadable"):
            CheckpointStore(self.ckpt).latest()
        with open(os.path.join(self.ckpt, "LATEST"), "w") as f:
            f.write("garbage")
        with self.assertRaisesRegex(CheckpointError, "LATEST: 'garbage' is not a checkpoint name"):
            CheckpointStore(self.ckpt).latest()

    def test_sigterm_checkpoints_and_ends_the_loop(self):
        agent = self.agent(100, [(100, float("inf"))])
        model = Model()
        it = GavelIterator(range(3), model.save, model.load, env=self.env(agent), log=self.logs.append)
        previous = signal.getsignal(signal.SIGTERM)
        try:
            seen = []
            for _ in it:
                seen.append(it.steps_done)
                model.step()
                if it.steps_done == 3:
                    os.kill(os.getpid(), signal.SIGTERM)
            self.assertEqual(seen, [0, 1, 2, 3])
            self.assertTrue(it.stopped_by_signal)
            self.assertEqual(CheckpointStore(self.ckpt).latest()[1], 4)
            progress = agent.calls_of("Progress")[-1]
            self.assertEqual(progress["checkpointedSteps"], 4)
        finally:
            signal.signal(signal.SIGTERM, previous)

    def test_token_is_sent_and_agent_errors_are_raised(self):
        agent = self.agent(10, [(10, float("inf"))], token="tok-12345678")
        model = Model()
        with self.assertRaisesRegex(AgentError, "HTTP 401: missing or wrong token"):
            self.make(agent, model)
        it = GavelIterator(range(3), model.save, model.load, env=self.env(agent, GAVEL_TOKEN="tok-12345678"),
                           log=self.logs.append, handle_sigterm=False)
        self.assertEqual(it.total_steps, 10)
        with self.assertRaisesRegex(AgentError, "HTTP 404: this agent runs no job 8"):
            GavelIterator(range(3), model.save, model.load,
                          env=self.env(agent, GAVEL_JOB_ID="8", GAVEL_TOKEN="tok-12345678"),
                          log=self.logs.append, handle_sigterm=False)

    def test_an_unreachable_agent_is_an_error(self):
        agent = self.agent(10, [(10, float("inf"))])
        agent.close()
        self.agents.remove(agent)
        with self.assertRaisesRegex(AgentError, "unreachable"):
            self.make(agent, Model())

    def test_standalone_without_an_agent(self):
        model = Model()
        it = GavelIterator(range(2), model.save, model.load, env={"GAVEL_CHECKPOINT_DIR": self.ckpt},
                           total_steps=6, log=self.logs.append, handle_sigterm=False)
        self.assertEqual(self.run_loop(it, model), list(range(6)))
        self.assertTrue(it.completed)
        self.assertEqual(CheckpointStore(self.ckpt).latest()[1], 6)

    def test_reiterates_the_iterable_across_epochs(self):
        agent = self.agent(100, [(7, float("inf"))])
        items = list(GavelIterator([10, 20, 30], lambda d: None, lambda d: None, env=self.env(agent),
                                   log=self.logs.append, handle_sigterm=False))
        self.assertEqual(items, [10, 20, 30, 10, 20, 30, 10])

    def test_proto3_json_numbers(self):
        lease = Lease.from_json({"stopAtStep": "18446744073709551615", "maxDurationS": "Infinity"})
        self.assertEqual(lease.stop_at_step, 2 ** 64 - 1)
        self.assertEqual(lease.max_duration_s, float("inf"))
        self.assertEqual(Lease.from_json({}), Lease(0, 0.0))
        with self.assertRaisesRegex(AgentError, "lease.stopAtStep"):
            Lease.from_json({"stopAtStep": "x"})


class TrainingProgramTest(unittest.TestCase):
    """The example training program's table lookup (its runs are tested from C++)."""

    def setUp(self):
        repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        sys.path.insert(0, os.path.join(repo, "examples", "training"))
        import train  # noqa: E402
        self.train = train
        with open(os.path.join(repo, "data", "simulation_throughputs.json")) as f:
            self.table = json.load(f)

    def test_step_rate_comes_from_the_table(self):
        self.assertAlmostEqual(self.train.step_throughput(self.table, "v100", "A3C", 1), 7.176, places=2)
        self.assertAlmostEqual(self.train.step_throughput(self.table, "k80", "CycleGAN", 1), 0.505, places=2)

    def test_missing_entries_are_named(self):
        with self.assertRaisesRegex(ValueError, "GPU type 'h100'"):
            self.train.step_throughput(self.table, "h100", "A3C", 1)
        with self.assertRaisesRegex(ValueError, r"\('Nope', 1\)"):
            self.train.step_throughput(self.table, "v100", "Nope", 1)

    def test_checksum_is_order_sensitive(self):
        self.assertEqual(self.train.expected_checksum(3), expected_checksum(3))
        swapped = self.train.next_checksum(self.train.next_checksum(0, 1), 0)
        self.assertNotEqual(swapped, self.train.expected_checksum(2))

    def test_pacing_makes_up_overheads_but_not_pauses_between_leases(self):
        # A step of 0.25 s on a fake clock; sleep advances it. Hand-computed schedule:
        clock = FakeClock()
        clock.now = 0.0
        sleeps = []

        def sleep(seconds):
            sleeps.append(round(seconds, 9))
            clock.now += seconds

        pacer = self.train.Pacer(0.25, clock=clock, sleep=sleep)
        first, second = Lease(100, 6.0), Lease(100, 6.0)
        for _ in range(4):
            pacer.step(first)  # 0.25 s each: the clock is at 1.0
        clock.now += 0.1  # a progress report inside the lease: made up on the next step
        pacer.step(first)
        self.assertEqual(sleeps[4], 0.15)
        self.assertEqual(clock.now, 1.25)  # on the pace again
        clock.now += 0.5  # waiting at the lease end for the next round: not made up
        pacer.step(second)
        pacer.step(second)
        self.assertEqual(sleeps[5:], [0.25, 0.25])
        self.assertEqual(clock.now, 2.25)  # 1.75 + two whole steps; the old pace gave 2.0
        clock.now += 1.5  # a stall of more than a second inside a lease: not made up either
        pacer.step(second)
        self.assertEqual(sleeps[7], 0.25)
        self.assertEqual(clock.now, 4.0)


if __name__ == "__main__":
    unittest.main()
