"""GavelIterator: the training loop's side of Gavel's lease protocol (standard library only).

Wrap the data loader of a training script::

    from gavel_iterator import GavelIterator

    def save_checkpoint(directory):      # write the model/optimizer state into `directory`
        torch.save(state, os.path.join(directory, "model.pt"))

    def load_checkpoint(directory):      # restore it from `directory`
        state.update(torch.load(os.path.join(directory, "model.pt")))

    loader = GavelIterator(data_loader, save_checkpoint, load_checkpoint)
    for batch in loader:                 # loader.steps_done = steps finished before this one
        train_step(batch)

The iterator finds its worker agent through the environment the agent gives every job
(GAVEL_AGENT_URL, GAVEL_JOB_ID, GAVEL_WORKER_ID, GAVEL_ROUND_ID, GAVEL_CHECKPOINT_DIR, ...;
see proto/iterator.proto). At construction it restores the latest checkpoint (calling
load_checkpoint) and asks the agent for its lease (Init). Each step it counts; every few
seconds it reports progress (Progress), which also brings lease extensions. When the lease is
reached (a step count or a training time) it saves a checkpoint (calling save_checkpoint),
tells the agent (Done) and either goes on under a new lease or ends the loop. When the job's
total steps are reached it saves, says Done(COMPLETE) and ends the loop. On SIGTERM (the agent
ending the job early) it saves at the next step boundary and ends the loop.

The checkpoint contract (docs/checkpointing.md): checkpoints live in versioned directories
under GAVEL_CHECKPOINT_DIR, in a namespace of the launch (GAVEL_ATTEMPT) that claimed the
job's checkpoint at start, and become current by an atomic rename of the LATEST pointer, after
the user's save_checkpoint returned and the files were synced. Only checkpointed steps are
reported as done, so steps lost with a killed process are redone, never counted twice, and
over a job's whole life the loop body runs exactly the job's total steps.

Without GAVEL_AGENT_URL (running outside Gavel) the iterator runs `total_steps` steps (the
argument, or GAVEL_TOTAL_STEPS) under an unlimited lease and checkpoints at the end if it has
a checkpoint directory.
"""

import json
import math
import os
import re
import shutil
import signal
import sys
import threading
import time
import urllib.error
import urllib.request

__all__ = [
    "AgentError",
    "CheckpointError",
    "CheckpointStore",
    "GavelIterator",
    "Lease",
]

_METHOD_PREFIX = "/gavel.wire.Iterator/"
_POINTER = "LATEST"
_META = "gavel_iterator.json"
_ATTEMPT_NAME = re.compile(r"^attempt-([0-9]{1,19})$")
_CHECKPOINT_NAME = re.compile(r"^ckpt-(\d{12,})$")
_FORMAT = 1


class AgentError(RuntimeError):
    """The agent refused a call or could not be reached. `status` is the HTTP status (0 when
    the agent could not be reached at all)."""

    def __init__(self, method, status, message):
        super().__init__("gavel agent %s: %s%s" % (method, "HTTP %d: " % status if status else "", message))
        self.method = method
        self.status = status


class CheckpointError(RuntimeError):
    """The checkpoint directory is inconsistent (the message names the file)."""


def _as_int(value, field):
    """proto3 JSON writes 64-bit integers as strings; accept both."""
    try:
        return int(value)
    except (TypeError, ValueError):
        raise AgentError("response", 0, "field %s: not an integer: %r" % (field, value))


def _as_float(value, field):
    """proto3 JSON writes non-finite doubles as the strings "Infinity", "-Infinity", "NaN"."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise AgentError("response", 0, "field %s: not a number: %r" % (field, value))


class Lease:
    """Permission to train: stop at step `stop_at_step` (absolute) or after `max_duration_s`
    seconds of training, whichever comes first. A gang lease (`step_bound_only`, multi-GPU
    jobs) stops at `stop_at_step` only: every rank gets the same step, so all stop together."""

    __slots__ = ("stop_at_step", "max_duration_s", "round_end_unix_ms", "step_bound_only")

    def __init__(self, stop_at_step, max_duration_s, round_end_unix_ms=0, step_bound_only=False):
        self.stop_at_step = stop_at_step
        self.max_duration_s = max_duration_s
        self.round_end_unix_ms = round_end_unix_ms
        self.step_bound_only = bool(step_bound_only)

    @classmethod
    def from_json(cls, value):
        value = value or {}
        return cls(
            _as_int(value.get("stopAtStep", 0), "lease.stopAtStep"),
            _as_float(value.get("maxDurationS", 0.0), "lease.maxDurationS"),
            _as_int(value.get("roundEndUnixMs", 0), "lease.roundEndUnixMs"),
            value.get("stepBoundOnly", False) is True,
        )

    def __eq__(self, other):
        return isinstance(other, Lease) and (
            (self.stop_at_step, self.max_duration_s, self.round_end_unix_ms, self.step_bound_only)
            == (other.stop_at_step, other.max_duration_s, other.round_end_unix_ms,
                other.step_bound_only)
        )

    def __repr__(self):
        return "Lease(stop_at_step=%d, max_duration_s=%g%s)" % (
            self.stop_at_step, self.max_duration_s, ", step_bound_only" if self.step_bound_only else "")


class _AgentClient:
    """proto3 JSON over HTTP/1.1 to the agent's iterator endpoint (iterator.proto)."""

    def __init__(self, url, token=None):
        self._url = url.rstrip("/")
        self._token = token

    def call(self, method, request, timeout):
        body = json.dumps(request).encode("utf-8")
        http_request = urllib.request.Request(
            self._url + _METHOD_PREFIX + method, data=body, method="POST",
            headers={"Content-Type": "application/json"})
        if self._token:
            http_request.add_header("Authorization", "Bearer " + self._token)
        try:
            with urllib.request.urlopen(http_request, timeout=timeout) as response:
                return json.loads(response.read().decode("utf-8") or "{}")
        except urllib.error.HTTPError as error:
            try:
                message = json.loads(error.read().decode("utf-8")).get("error", "")
            except (ValueError, AttributeError):
                message = error.reason
            raise AgentError(method, error.code, message) from None
        except (urllib.error.URLError, OSError) as error:
            raise AgentError(method, 0, "unreachable at %s (%s)" % (self._url, error)) from None


class CheckpointStore:
    """A job's checkpoints (docs/checkpointing.md, "The layout on disk"):

        <root>/attempt-<N>/LATEST             the current checkpoint of launch N, e.g. "ckpt-000000000120"
        <root>/attempt-<N>/ckpt-000000000120/ the user's files + gavel_iterator.json {"steps": 120, ...}
        <root>/LATEST, <root>/ckpt-*/         the same for runs outside Gavel (no GAVEL_ATTEMPT)

    A checkpoint becomes current only by the atomic replacement of a LATEST, after its files
    were written and synced, so a process killed at any moment leaves either the old or the new
    checkpoint current, never a partial one.

    The fence: every launch of a job (GAVEL_ATTEMPT) writes only in its own namespace. At start
    it claims the job's checkpoint (moves the current checkpoint of the latest earlier launch
    that has one, by one rename, into its own namespace) and removes the earlier namespaces, so a process of an earlier
    launch still running can neither overwrite nor shrink the checkpoint the scheduler's count
    rests on (the scheduler credits reports of the current launch only). The same as
    CheckpointStore in src/gavel/iterator/gavel_iterator.h."""

    def __init__(self, root, attempt=None):
        self.root = root
        self.attempt = attempt
        self.dir = root if attempt is None else self.namespace_of(root, attempt)

    @staticmethod
    def namespace_of(root, attempt):
        return os.path.join(root, "attempt-%d" % attempt)

    def latest(self):
        """(directory, steps) of the current checkpoint, or None when there is none. A launch's
        store reads its own namespace; a store without attempt the newest of the whole job."""
        if self.attempt is not None:
            return _current_in(self.dir)
        return self._newest_below(None)

    def claim(self):
        """A launch's start (rank 0): makes the job's checkpoint (the latest earlier launch's)
        this launch's own, removes earlier launches' namespaces and returns latest()."""
        if self.attempt is None:
            return self.latest()
        for _ in range(20):
            if _current_in(self.dir) is not None:
                break  # claimed already
            best = self._newest_below(self.attempt)
            if best is None:
                break
            os.makedirs(self.dir, exist_ok=True)
            target = os.path.join(self.dir, os.path.basename(best[0]))
            shutil.rmtree(target, ignore_errors=True)
            try:
                os.rename(best[0], target)
            except OSError:
                continue  # claimed or cleaned up meanwhile by another launch: look again
            self._point(os.path.basename(target))
            break
        for path, attempt in self._namespaces(self.attempt):
            self._remove(path, attempt)
        return _current_in(self.dir)

    def mark_claimed(self):
        os.makedirs(self.dir, exist_ok=True)
        with open(os.path.join(self.dir, "CLAIMED"), "w", encoding="utf-8") as f:
            f.write("claimed\n")

    def wait_for_claim(self, timeout_s):
        """Ranks other than 0: waits until rank 0 has claimed the launch's checkpoint, so that
        every rank loads the same one. False on timeout."""
        deadline = time.monotonic() + timeout_s
        while not os.path.exists(os.path.join(self.dir, "CLAIMED")):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def save(self, steps, save_fn, extra=None):
        """Writes a checkpoint of `steps` steps through save_fn(directory) and makes it current.
        Returns its directory."""
        os.makedirs(self.dir, exist_ok=True)
        staging = os.path.join(self.dir, ".staging-%d-%d" % (os.getpid(), steps))
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging)
        save_fn(staging)
        meta = {"format": _FORMAT, "steps": steps, "saved_unix": time.time()}
        if self.attempt is not None:
            meta["attempt"] = self.attempt
        meta.update(extra or {})
        with open(os.path.join(staging, _META), "w", encoding="utf-8") as f:
            json.dump(meta, f)
        _sync_tree(staging)
        name = "ckpt-%012d" % steps
        final = os.path.join(self.dir, name)
        if os.path.exists(final):
            # Left by a process that died between the rename and the pointer update: not current
            # (the pointer names an older one), so it may go.
            shutil.rmtree(final)
        os.rename(staging, final)
        self._point(name)
        # Everything else is garbage now: older checkpoints and leftovers of dead processes.
        for entry in os.listdir(self.dir):
            path = os.path.join(self.dir, entry)
            if entry != name and (_CHECKPOINT_NAME.match(entry) or entry.startswith(".staging-")):
                shutil.rmtree(path, ignore_errors=True)
        return final

    def wait_for(self, steps, newer_than, timeout_s):
        """Waits until the current checkpoint holds at least `steps` steps or more than
        `newer_than` (ranks other than 0 wait for rank 0's save, which may have stopped a few
        steps earlier). Returns the steps held (maybe fewer after a timeout)."""
        deadline = time.monotonic() + timeout_s
        while True:
            latest = self.latest()
            held = latest[1] if latest else 0
            if held >= steps or held > newer_than or time.monotonic() >= deadline:
                return held
            time.sleep(0.05)

    def _newest_below(self, below):
        """The current checkpoint of the latest launch below `below` that has one (the root's
        own last): the job's current line of checkpoints. An earlier launch may hold more steps
        (a process that ran on after it was replaced), but the scheduler never credited those."""
        namespaces = sorted(self._namespaces(below), key=lambda ns: -1 if ns[1] is None else ns[1],
                            reverse=True)
        for k, (path, attempt) in enumerate(namespaces):
            current = _current_in(path, dangling_is_empty=attempt is not None)
            if current is not None:
                return current
            # A LATEST whose checkpoint is gone: a later launch claimed it. If that launch has
            # moved it but not yet made it current (killed or slow between its rename and its
            # LATEST), it is in that launch's namespace under the same name: take it from there,
            # for removing that namespace would lose the job's checkpoint.
            if attempt is None:
                continue
            name = _pointed_name(path)
            if name is None:
                continue
            for later_path, _ in namespaces[:k]:
                moved = _checkpoint_named(later_path, name)
                if moved is not None:
                    return moved
        return None

    def _namespaces(self, below):
        """(path, attempt) of the root's own checkpoints (attempt None) and of every
        attempt-<N> with N below `below` (None: all)."""
        out = [(self.root, None)]
        try:
            entries = os.listdir(self.root)
        except FileNotFoundError:
            return out
        for entry in entries:
            match = _ATTEMPT_NAME.match(entry)
            if match and (below is None or int(match.group(1)) < below):
                out.append((os.path.join(self.root, entry), int(match.group(1))))
        return out

    def _remove(self, path, attempt):
        if attempt is not None:
            shutil.rmtree(path, ignore_errors=True)
            return
        try:
            entries = os.listdir(path)
        except FileNotFoundError:
            return
        for entry in entries:
            if (entry == _POINTER or _CHECKPOINT_NAME.match(entry) or entry.startswith(".staging-")
                    or entry.startswith(".%s.tmp-" % _POINTER)):
                full = os.path.join(path, entry)
                if os.path.isdir(full):
                    shutil.rmtree(full, ignore_errors=True)
                else:
                    try:
                        os.remove(full)
                    except FileNotFoundError:
                        pass

    def _point(self, name):
        """Makes `name`, a checkpoint directory of this namespace, current."""
        temporary = os.path.join(self.dir, ".%s.tmp-%d" % (_POINTER, os.getpid()))
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(name + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, os.path.join(self.dir, _POINTER))
        _sync_dir(self.dir)


def _pointed_name(directory):
    """The name a namespace's LATEST holds, or None without one."""
    try:
        with open(os.path.join(directory, _POINTER), "r", encoding="utf-8") as f:
            return f.read().strip() or None
    except FileNotFoundError:
        return None


def _checkpoint_named(directory, name):
    """(directory, steps) of the checkpoint `name` in `directory` when it is there whole (its
    metadata readable, its steps those of its name), else None."""
    match = _CHECKPOINT_NAME.match(name)
    if not match:
        return None
    checkpoint = os.path.join(directory, name)
    try:
        with open(os.path.join(checkpoint, _META), "r", encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return None
    steps = meta.get("steps") if isinstance(meta, dict) else None
    if not isinstance(steps, int) or steps != int(match.group(1)):
        return None
    return checkpoint, steps


def _current_in(directory, dangling_is_empty=False):
    """(directory, steps) of one namespace's current checkpoint, or None. `dangling_is_empty`:
    a LATEST whose checkpoint is gone (claimed by a later launch) counts as none, not an error."""
    pointer = os.path.join(directory, _POINTER)
    try:
        with open(pointer, "r", encoding="utf-8") as f:
            name = f.read().strip()
    except FileNotFoundError:
        return None
    match = _CHECKPOINT_NAME.match(name)
    if not match:
        raise CheckpointError("%s: %r is not a checkpoint name (ckpt-<12+ digits>)" % (pointer, name))
    checkpoint = os.path.join(directory, name)
    if dangling_is_empty and not os.path.isdir(checkpoint):
        return None
    meta_path = os.path.join(checkpoint, _META)
    try:
        with open(meta_path, "r", encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError) as error:
        if dangling_is_empty and not os.path.isdir(checkpoint):
            return None
        raise CheckpointError("%s: unreadable (%s); %s names it as current" % (meta_path, error, pointer))
    steps = meta.get("steps")
    if not isinstance(steps, int) or steps != int(match.group(1)):
        raise CheckpointError("%s: field steps=%r does not match the directory name" % (meta_path, steps))
    return checkpoint, steps


def _sync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_tree(root):
    for directory, _, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _sync_dir(directory)


class GavelIterator:
    """Wraps `iterable`; see the module documentation.

    save_checkpoint(directory) and load_checkpoint(directory) are the script's functions; the
    iterator decides when they run. `iterable` is re-iterated when it runs out (an epoch ends),
    so the loop ends only at a lease end, the job's completion, or SIGTERM.

    Attributes a script may read: steps_done (steps finished before the current one), lease,
    total_steps, completed (the job reached its total steps), stopped_by_signal.
    """

    def __init__(self, iterable, save_checkpoint, load_checkpoint, *, env=None, total_steps=None,
                 checkpoint_dir=None, progress_interval_s=2.0, clock=time.monotonic, log=None,
                 handle_sigterm=True):
        self._env = os.environ if env is None else env
        self._iterable = iterable
        self._iterator = None
        self._save_fn = save_checkpoint
        self._load_fn = load_checkpoint
        self._clock = clock
        self._log_fn = log
        self._progress_interval_s = progress_interval_s

        env = self._env
        url = env.get("GAVEL_AGENT_URL", "")
        self._agent = _AgentClient(url, env.get("GAVEL_TOKEN")) if url else None
        self._job_id = int(env.get("GAVEL_JOB_ID", "0"))
        self._worker_id = int(env.get("GAVEL_WORKER_ID", "0"))
        self._round_id = int(env.get("GAVEL_ROUND_ID", "0"))
        # Outside Gavel (e.g. under torchrun) torchrun's RANK/WORLD_SIZE say who saves.
        self._rank = int(env.get("GAVEL_RANK", env.get("RANK", "0")))
        self._world_size = int(env.get("GAVEL_WORLD_SIZE", env.get("WORLD_SIZE", "1")))
        root = checkpoint_dir if checkpoint_dir is not None else env.get("GAVEL_CHECKPOINT_DIR")
        attempt = env.get("GAVEL_ATTEMPT", "")
        self._store = CheckpointStore(root, int(attempt) if attempt else None) if root else None

        self._outstanding = False          # a step was handed out and not yet counted
        self._finished = False
        self.completed = False
        self.stopped_by_signal = False
        self._terminate = threading.Event()

        # ---- Restore ----
        self._steps = 0
        latest = None
        if self._store is not None:
            # The launch's claim on the job's checkpoint (CheckpointStore); the other ranks
            # load what rank 0 claimed.
            if self._store.attempt is None:
                latest = self._store.latest()  # outside Gavel: no launches to fence
            elif self._world_size > 1 and self._rank != 0:
                if not self._store.wait_for_claim(120.0):
                    raise CheckpointError("%s: rank 0 did not claim the job's checkpoint within 120 s" % root)
                latest = self._store.latest()
            else:
                latest = self._store.claim()
                self._store.mark_claimed()
            credited = int(env.get("GAVEL_CHECKPOINTED_STEPS", "0"))
            held = latest[1] if latest else 0
            if credited > held:
                raise CheckpointError(
                    "%s: no checkpoint holds the %d steps the scheduler credited (the newest holds %d): "
                    "is the checkpoint directory shared by every agent?" % (root, credited, held))
        if latest is not None:
            directory, steps = latest
            self._load_fn(directory)
            self._steps = steps
            self._log("restored checkpoint %s (step %d)" % (directory, steps))
        self._checkpointed = self._steps

        # ---- Lease ----
        self._hold_timeout_s = 0.0
        if self._agent is not None:
            response = self._agent.call("Init", {
                "jobId": self._job_id, "workerId": self._worker_id, "roundId": self._round_id,
                "restoredSteps": self._steps}, timeout=30.0)
            self._total_steps = _as_int(response.get("totalSteps", 0), "totalSteps")
            self._hold_timeout_s = _as_float(response.get("holdTimeoutS", 0.0), "holdTimeoutS")
            lease = Lease.from_json(response.get("lease"))
        else:
            if total_steps is None:
                total_steps = int(env.get("GAVEL_TOTAL_STEPS", "0"))
            self._total_steps = int(total_steps)
            lease = Lease(self._total_steps, math.inf)
        self._adopt_lease(lease)
        self._log("job %d on worker %d: %s, total %d steps" % (self._job_id, self._worker_id, lease,
                                                               self._total_steps))

        if handle_sigterm and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda signum, frame: self._terminate.set())

    # ---- What the script reads ----

    @property
    def steps_done(self):
        """Absolute steps finished before the one being run (restored steps included)."""
        return self._steps

    @property
    def total_steps(self):
        return self._total_steps

    @property
    def lease(self):
        return self._lease

    @property
    def checkpointed_steps(self):
        return self._checkpointed

    # ---- The loop ----

    def __iter__(self):
        return self

    def __next__(self):
        if self._finished:
            raise StopIteration
        if self._outstanding:
            self._outstanding = False
            self._steps += 1
        now = self._clock()
        if self._terminate.is_set():
            self._checkpoint()
            try:
                self._progress(now)  # tells the agent the new checkpoint before it reports
            except AgentError as error:
                self._log("could not report the final checkpoint: %s" % error)
            self.stopped_by_signal = True
            self._finish("stopped by SIGTERM at step %d" % self._steps)
        if self._steps >= self._total_steps:
            self._checkpoint()
            self.completed = True
            if self._agent is not None:
                self._agent.call("Done", self._done_request("COMPLETE", now), timeout=30.0)
            self._finish("complete at step %d" % self._steps)
        if self._lease_reached(now):
            self._end_lease(now)  # continues under a new lease, or finishes
        elif self._agent is not None and now >= self._next_progress:
            self._progress(now)

        if self._training_start is None:
            self._training_start = self._clock()  # training time starts at the lease's first step
        item = self._next_item()
        self._outstanding = True
        return item

    def _next_item(self):
        if self._iterator is None:
            self._iterator = iter(self._iterable)
        try:
            return next(self._iterator)
        except StopIteration:
            self._iterator = iter(self._iterable)  # the next epoch
            try:
                return next(self._iterator)
            except StopIteration:
                raise ValueError("GavelIterator: the wrapped iterable yields nothing") from None

    def _lease_reached(self, now):
        if self._steps >= self._lease.stop_at_step:
            return True
        # A gang lease ends at its step only: a rank stopping on its own clock would leave the
        # others blocked in a collective.
        return (not self._lease.step_bound_only
                and now - self._lease_start >= self._lease.max_duration_s)

    def _end_lease(self, now):
        self._checkpoint()
        if self._agent is None:
            self._finish("lease reached at step %d" % self._steps)
        response = self._agent.call("Done", self._done_request("LEASE_REACHED", now),
                                    timeout=self._hold_timeout_s + 30.0)
        if not response.get("continueRunning", False):
            self._finish("lease ended at step %d" % self._steps)
        self._round_id = _as_int(response.get("roundId", self._round_id), "roundId")
        self._adopt_lease(Lease.from_json(response.get("lease")))
        self._log("lease extended: %s (round %d)" % (self._lease, self._round_id))
        if self._lease_reached(self._clock()):
            # A lease that is over already (e.g. zero duration) ends here too.
            self._end_lease(self._clock())

    def _finish(self, why):
        self._finished = True
        self._log(why)
        raise StopIteration

    def _adopt_lease(self, lease):
        self._lease = lease
        self._lease_start = self._clock()
        self._lease_base_steps = self._steps
        self._training_start = None
        interval = self._progress_interval_s
        if math.isfinite(lease.max_duration_s) and lease.max_duration_s > 0:
            interval = min(interval, max(0.25, lease.max_duration_s / 8.0))
        self._interval = interval
        self._next_progress = self._lease_start + interval

    def _training_seconds(self, now):
        return 0.0 if self._training_start is None else max(0.0, now - self._training_start)

    def _done_request(self, reason, now):
        return {"jobId": self._job_id, "workerId": self._worker_id, "roundId": self._round_id,
                "reason": reason, "checkpointedSteps": self._checkpointed,
                "stepsTrained": self._steps - self._lease_base_steps,
                "trainingSeconds": self._training_seconds(now)}

    def _progress(self, now):
        self._next_progress = now + self._interval
        if self._agent is None:
            return
        response = self._agent.call("Progress", {
            "jobId": self._job_id, "workerId": self._worker_id, "roundId": self._round_id,
            "steps": self._steps, "checkpointedSteps": self._checkpointed,
            "trainingSeconds": self._training_seconds(now)}, timeout=30.0)
        lease = Lease.from_json(response.get("lease"))
        if lease != self._lease and not self._lease.step_bound_only:
            # A new grant (the scheduler extended the lease into a new round while we ran): its
            # duration counts from now, and a new micro-task begins.
            self._adopt_lease(lease)
            self._training_start = now
            self._log("lease updated: %s" % lease)

    def _checkpoint(self):
        """Makes the current step count durable (no-op when nothing changed since the last)."""
        if self._steps == self._checkpointed:
            return
        if self._store is None:
            # Outside Gavel without a checkpoint directory: nothing outlives the process anyway.
            self._checkpointed = self._steps
            return
        if self._world_size > 1 and self._rank != 0:
            # Rank 0 saves for everyone; the others wait (bounded) for its save to land.
            held = self._store.wait_for(self._steps, self._checkpointed, timeout_s=30.0)
            self._checkpointed = min(self._steps, max(held, self._checkpointed))
            return
        directory = self._store.save(self._steps, self._save_fn, {"job_id": self._job_id})
        self._checkpointed = self._steps
        self._log("checkpoint %s (step %d)" % (directory, self._steps))

    def _log(self, message):
        if self._log_fn is not None:
            self._log_fn(message)
        else:
            sys.stderr.write("[gavel_iterator] %s\n" % message)
            sys.stderr.flush()
