"""Behaviour tests of the traceback parser beyond its examples (its contract: test_all_parsers.py)."""

from __future__ import annotations

from functools import partial

from hanglens.parsers.traceback import TracebackParser

from .harness import events as read_events

events = partial(read_events, [TracebackParser])


def test_interleaved_ranks_keep_their_own_exception() -> None:
    found = events(TracebackParser.examples[1].text, "exception")
    assert sorted((e.rank, e.get("exc_type")) for e in found) == [
        (0, "torch.OutOfMemoryError"), (1, "torch.distributed.DistBackendError")]


def test_event_points_at_traceback_start_and_quotes_exception_line() -> None:
    text = ("noise\nTraceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n    f()\n"
            "KeyError: 'x'\n")
    (ev,) = events(text, "exception")
    got = (ev.ref.line, ev.text, ev.get("exc_type"), ev.get("message"))
    assert got == (2, "KeyError: 'x'", "KeyError", "'x'")


def test_continuation_after_message_does_not_end_the_chain() -> None:
    text = ("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n    f()\n"
            "RuntimeError: first line\nsecond line of the message\n\n"
            "During handling of the above exception, another exception occurred:\n\n"
            "Traceback (most recent call last):\n  File \"b.py\", line 2, in g\n    h()\nKeyboardInterrupt\n")
    (ev,) = events(text, "exception")
    assert (ev.get("exc_type"), ev.get("chained"), ev.get("frame_file")) == (
        "KeyboardInterrupt", ["RuntimeError"], "b.py")


def test_dcp_checkpoint_exception_keeps_the_failed_ranks_tracebacks_inside_it() -> None:
    # torch.distributed.checkpoint raises one CheckpointException on every rank; its text relays each
    # failing rank's own traceback under `Traceback (most recent call last): (RANK <r>)`.
    lib = "/home/user/.venv/lib/python3.11/site-packages/torch/distributed/checkpoint"
    text = "\n".join(f"[rank3]: {x}" for x in [
        "Traceback (most recent call last):",
        '  File "/home/user/job/train.py", line 71, in resume',
        "    dcp.load(state, checkpoint_id=path)",
        f'  File "{lib}/utils.py", line 221, in reduce_scatter',
        "    raise result",
        "torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys([1, 2])",
        "Traceback (most recent call last): (RANK 1)",
        f'  File "{lib}/default_planner.py", line 495, in create_default_local_load_plan',
        '    raise RuntimeError(f"Missing key in checkpoint state_dict: {fqn}.")',
        "RuntimeError: Missing key in checkpoint state_dict: optim.state.3.exp_avg.",
        "Traceback (most recent call last): (RANK 2)",
        f'  File "{lib}/default_planner.py", line 495, in create_default_local_load_plan',
        '    raise RuntimeError(f"Missing key in checkpoint state_dict: {fqn}.")',
        "RuntimeError: Missing key in checkpoint state_dict: optim.state.3.exp_avg.",
    ])
    (ev,) = events(text, "exception")
    assert ev.rank == 3 and ev.get("exc_type", "").endswith("CheckpointException")
    assert ev.get("frames")[0] == "/home/user/job/train.py:71 in resume"
    assert ev.get("original_message") == "Missing key in checkpoint state_dict: optim.state.3.exp_avg."


def test_an_exception_raised_while_handling_another_keeps_the_stack_where_that_one_was_raised() -> None:
    # Python prints the earlier traceback from the frame that caught it (`wrapper`), the later one from the
    # outermost frame down into that same handler: together they are the stack at the first exception.
    text = ("Traceback (most recent call last):\n"
            "  File \"/x/torch/distributed/c10d_logger.py\", line 83, in wrapper\n    return func(*args)\n"
            "  File \"/x/torch/distributed/distributed_c10d.py\", line 4394, in all_gather_single\n"
            "    work.wait()\n"
            "RuntimeError: Connection closed by peer\n\n"
            "During handling of the above exception, another exception occurred:\n\n"
            "Traceback (most recent call last):\n"
            "  File \"train.py\", line 9, in step\n    model(x)\n"
            "  File \"/x/torch/distributed/c10d_logger.py\", line 85, in wrapper\n    msg = _get(func)\n"
            "  File \"/x/torch/distributed/c10d_logger.py\", line 53, in _get\n    def _get(f):\n"
            "KeyboardInterrupt\n")
    (ev,) = events(text, "exception")
    assert ev.get("context_frames") == [
        "train.py:9 in step", "/x/torch/distributed/c10d_logger.py:83 in wrapper",
        "/x/torch/distributed/distributed_c10d.py:4394 in all_gather_single"]
    assert ev.get("context_sources") == ["model(x)", "return func(*args)", "work.wait()"]
    assert ev.get("frame_func") == "_get"   # the event is still the last exception's


def test_a_chain_whose_later_traceback_does_not_hold_the_handler_has_no_context_stack() -> None:
    text = ("Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n    g()\n"
            "RuntimeError: first\n\nThe above exception was the direct cause of the following exception:\n\n"
            "Traceback (most recent call last):\n  File \"b.py\", line 2, in h\n    k()\n"
            "ValueError: second\n")
    (ev,) = events(text, "exception")
    assert ev.get("context_frames") is None


def test_ray_task_error_is_the_remote_workers_exception() -> None:
    # Ray relays a remote actor's traceback under `ray::<Actor>.<method>() (pid=<p>, ip=<ip>, ...)` in the
    # caller's `RayTaskError(<cause>)`: the exception, its frames and its writer are the actor's (the stream
    # Ray tags `(<Actor> pid=<p>)`), not the driver's that called `ray.get`.
    text = ("Traceback (most recent call last):\n"
            "  File \"/srv/launch.py\", line 61, in <module>\n"
            "    ray.get(futures)\n"
            "  File \"/srv/.venv/lib/python3.11/site-packages/ray/_private/worker.py\", line 2890, in get\n"
            "    raise value.as_instanceof_cause()\n"
            "ray.exceptions.RayTaskError(KeyError): ray::TPShard.forward_step() (pid=20417, ip=10.8.1.5, "
            "actor_id=0c9d4e5f6a7b8c9d0e1f2a3b04000000, repr=<serve.TPShard object at 0x7f00aa11bb22>)\n"
            "  File \"/srv/serve.py\", line 212, in forward_step\n"
            "    adapter = self.adapters[req.adapter_id]\n"
            "KeyError: 'fr-lora'\n")
    (ev,) = events(text, "exception")
    assert (ev.get("exc_type"), ev.get("message"), ev.get("frame_file"), ev.writer, ev.host) == (
        "KeyError", "'fr-lora'", "/srv/serve.py", "ray TPShard 20417", "10.8.1.5")


def test_deep_framework_stack_keeps_its_outermost_frame() -> None:
    # A Lightning 2.x training step that logs with `sync_dist=True` is 50-55 frames deep; two ranks' stacks
    # are compared from their outermost frame, so a stack must not lose its top below that depth.
    frames = "".join(f"  File \"/home/user/lib/layer{i}.py\", line {i + 1}, in f{i}\n    f{i + 1}()\n"
                     for i in range(55))
    text = ("Traceback (most recent call last):\n  File \"/home/user/train.py\", line 183, in <module>\n"
            "    main()\n" + frames + "RuntimeError: boom\n")
    (ev,) = events(text, "exception")
    got = ev.get("frames")
    assert (len(got), got[0], got[-1]) == (56, "/home/user/train.py:183 in <module>",
                                           "/home/user/lib/layer54.py:55 in f54")
