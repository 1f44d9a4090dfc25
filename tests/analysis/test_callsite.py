"""Call sites of blocking collectives: training step, phase boundary or side section, and the odd side."""

from __future__ import annotations

from hanglens.analysis import callsite
from hanglens.analysis.build import build
from hanglens.model import Event, SourceRef

LIB = "/opt/env/lib/python3.10/site-packages/torch"
C10D = f"{LIB}/distributed/distributed_c10d.py"
LOGGER = f"{LIB}/distributed/c10d_logger.py"


def stack(*user: tuple[str, int, str, str], tail: tuple[tuple[str, int, str, str], ...] = ()) -> tuple[
        list[str], list[str]]:
    """Frames (outermost first) and their source lines: the user's, then torch's."""
    frames = [f"{f}:{n} in {fn}" for f, n, fn, _ in (*user, *tail)]
    sources = [src for *_, src in (*user, *tail)]
    return frames, sources


def c10d(func: str, line: int = 2400) -> tuple[tuple[str, int, str, str], ...]:
    return ((LOGGER, 79, "wrapper", "return func(*args, **kwargs)"), (C10D, line, func, "work.wait()"))


MAIN = ("/srv/app/main.py", 30, "<module>", "run()")


def site(frames: list[str], sources: list[str], shared: int = 0) -> callsite.CallSite:
    s = callsite.call_site(frames, sources, shared)
    assert s is not None
    return s


def test_gradient_all_reduce_is_the_training_step() -> None:
    f, s = stack(MAIN, ("/srv/app/loop.py", 52, "run", "dist.all_reduce(flat_grad)"), tail=c10d("all_reduce"))
    got = site(f, s)
    assert (got.call, got.entry, got.site) == ("all_reduce", "all_reduce", "step")
    assert got.user_frame == "loop.py:52 in run"


def test_the_programs_own_script_name_is_no_section() -> None:
    # every rank runs the whole program in `ckpt_train.py`: its name says nothing of where a rank is
    main = ("/home/user/lm/ckpt_train.py", 224, "<module>", "main()")
    f, s = stack(main, ("/home/user/lm/ckpt_train.py", 208, "main", "loss = F.cross_entropy(model(x), y)"),
                 tail=c10d("all_gather_into_tensor"))
    assert site(f, s).site == "step"
    # a module of its own named for checkpointing still is one
    f, s = stack(main, ("/home/user/lm/ckpt_train.py", 150, "main", "mgr.run(step)"),
                 ("/home/user/lm/ckpt_io.py", 40, "run", "dist.all_gather(parts, t)"),
                 tail=c10d("all_gather"))
    assert site(f, s).site == "section"


def test_barrier_with_no_step_work_is_a_boundary() -> None:
    f, s = stack(MAIN, ("/srv/app/loop.py", 75, "run", "dist.barrier()"), tail=c10d("barrier"))
    assert site(f, s).site == "boundary"


def test_object_collective_inside_a_checkpoint_function_is_a_section() -> None:
    f, s = stack(
        MAIN,
        ("/srv/app/loop.py", 80, "run", "self.saver.write(step)"),
        ("/srv/app/persist.py", 14, "saveCheckpoint", "dist.broadcast_object_list(meta, src=0)"),
        tail=(*c10d("broadcast_object_list", 3100), (LOGGER, 79, "wrapper", "return func(*args, **kwargs)"),
              (C10D, 2300, "broadcast", "work = group.broadcast([tensor], opts)")),
    )
    got = site(f, s)
    assert (got.call, got.entry, got.site) == ("broadcast", "broadcast_object_list", "section")
    assert "saveCheckpoint" in (got.reason or "")


def test_object_collective_alone_is_a_section() -> None:
    f, s = stack(MAIN, ("/srv/app/loop.py", 80, "run", "dist.all_gather_object(out, obj)"),
                 tail=c10d("all_gather_object"))
    assert site(f, s).site == "section"


def test_ddp_backward_without_a_c10d_frame_is_the_step() -> None:
    f, s = stack(
        MAIN,
        ("/srv/app/loop.py", 60, "run", "out.mean().backward()"),
        (f"{LIB}/_tensor.py", 500, "backward", "torch.autograd.backward("),
        (f"{LIB}/autograd/__init__.py", 280, "backward", "_engine_run_backward("),
    )
    got = site(f, s)
    assert (got.call, got.site) == ("backward", "step")


def test_evaluation_around_ddp_forward_is_a_section_not_the_step() -> None:
    # A rank-0-only evaluation runs DDP's forward (which broadcasts buffers): the section wins.
    f, s = stack(
        MAIN,
        ("/srv/app/loop.py", 90, "run", "evaluate(model, val_loader)"),
        ("/srv/app/loop.py", 20, "evaluate", "out = model(x)"),
        (f"{LIB}/nn/parallel/distributed.py", 1600, "forward", "self._sync_buffers()"),
        tail=c10d("broadcast"),
    )
    assert site(f, s).site == "section"


def test_frames_every_side_shares_say_nothing() -> None:
    # The driver's name mentions evaluation, but both sides run it: only the frames below it count.
    driver = ("/srv/app/loop.py", 12, "train_and_evaluate", "fit()")
    a = stack(MAIN, driver, ("/srv/app/loop.py", 40, "fit", "dist.all_reduce(grads)"),
              tail=c10d("all_reduce"))
    b = stack(MAIN, driver, ("/srv/app/loop.py", 47, "fit", "dist.barrier()"), tail=c10d("barrier"))
    shared = callsite.common_prefix([a[0], b[0]])
    assert shared == 2
    assert site(*a, shared).site == "step"
    assert site(*b, shared).site == "boundary"
    assert site(*b).site == "section"  # read whole, the driver's name would decide


def test_identifier_tokens() -> None:
    assert callsite.tokens("saveCheckpoint") == ["save", "checkpoint"]
    assert callsite.tokens("_maybe_log_save_evaluate") == ["maybe", "log", "save", "evaluate"]
    assert "log" not in callsite.tokens("catalog_dialog")


def test_no_collective_no_site() -> None:
    assert callsite.call_site(["/srv/app/main.py:3 in <module>"], []) is None


def cs(rank: int, site_: str | None, entry: str = "all_reduce",
       where: str = "a.py:1 in f") -> tuple[int, callsite.CallSite]:
    return rank, callsite.CallSite(entry, entry, where, site_, None)


def test_odd_side_is_the_one_further_from_the_step() -> None:
    assert callsite.odd_sites(dict([cs(0, "step"), cs(1, "boundary", "barrier", "a.py:9 in f")])) == {1}
    assert callsite.odd_sites(dict([cs(0, "section", "broadcast"), cs(1, "boundary", "barrier")])) == {0}
    assert callsite.odd_sites(dict([cs(0, "step"), cs(1, "section", "gather"), cs(2, "step")])) == {1}


def test_barrier_side_whose_steps_ended_behind_left_the_loop() -> None:
    """A section against a barrier: the barrier side is odd when its last logged step is behind every step
    the section side logged (its loop ended first); otherwise the section side stays odd."""
    sides = dict([cs(0, "boundary", "barrier", "a.py:90 in main"), cs(1, "section", "gather_object")])
    assert callsite.odd_sites(sides, last_step={0: 2, 1: 3}) == {0}
    assert callsite.odd_sites(sides, last_step={0: 5, 1: 3}) == {1}
    assert callsite.odd_sites(sides, last_step={0: 3, 1: 3}) == {1}
    assert callsite.odd_sites(sides, last_step={1: 3}) == {1}
    assert callsite.odd_sites(sides) == {1}


def test_no_odd_side_without_evidence_on_every_side() -> None:
    assert callsite.odd_sites(dict([cs(0, "step"), cs(1, None, "barrier")])) == set()
    assert callsite.odd_sites(dict([cs(0, "step", "broadcast"), cs(1, "step")])) == set()
    assert callsite.odd_sites(dict([cs(0, "section", "broadcast"), cs(1, "section")])) == set()
    # Same call from the same place on both sides: nothing tells them apart.
    assert callsite.odd_sites(dict([cs(0, "boundary", "barrier"), cs(1, "boundary", "barrier")])) == set()


_n = iter(range(1, 1000))


def exc(rank: int, frames: list[str], sources: list[str], message: str) -> Event:
    fields = {"exc_type": "RuntimeError", "message": message, "frames": frames, "sources": sources}
    return Event(kind="exception", ref=SourceRef("job.log", next(_n)), text=message, parser="test", rank=rank,
                 fields=fields)


def test_collective_call_marks_the_odd_site_only_without_a_majority() -> None:
    step = stack(MAIN, ("/srv/app/loop.py", 52, "run", "dist.all_reduce(flat_grad)"), tail=c10d("all_reduce"))
    end = stack(MAIN, ("/srv/app/loop.py", 75, "run", "dist.barrier()"), tail=c10d("barrier"))
    timeout = "Timed out waiting 600000ms for recv operation to complete"
    two = {r["rank"]: r for r in build([exc(0, *step, timeout), exc(1, *end, timeout)])
           .fact("collective_call").to_dict(orient="records")}
    assert (two[0]["odd_site"], two[1]["odd_site"]) == (False, True)
    assert (two[0]["site"], two[1]["site"]) == ("step", "boundary")
    evs = [exc(0, *step, timeout), exc(1, *end, timeout), exc(2, *step, timeout)]
    three = {r["rank"]: r for r in build(evs).fact("collective_call").to_dict(orient="records")}
    # A majority decides by itself (minority), the call site is not needed.
    assert three[1]["minority"] and not any(r["odd_site"] for r in three.values())


def test_an_oom_in_backward_is_not_a_wait_in_ddp() -> None:
    back = stack(MAIN, ("/srv/app/loop.py", 60, "run", "loss.backward()"),
                 (f"{LIB}/autograd/__init__.py", 280, "backward", "_engine_run_backward("))
    end = stack(MAIN, ("/srv/app/loop.py", 75, "run", "dist.barrier()"), tail=c10d("barrier"))
    t = build([exc(0, *back, "CUDA out of memory. Tried to allocate 2.00 GiB"),
               exc(1, *end, "Connection closed by peer [10.1.1.2]:3301")])
    assert t.fact("collective_call").empty


def test_nearest_evidence_decides_a_stack_with_nothing_to_compare() -> None:
    driver = ("/srv/app/loop.py", 12, "train_and_evaluate", "fit()")
    step = stack(MAIN, driver, ("/srv/app/loop.py", 40, "fit", "dist.all_reduce(grads)"),
                 tail=c10d("all_reduce"))
    assert site(*step).site == "section"  # whole stack: the driver's name would decide
    got = callsite.call_site(*step, nearest=True)
    assert got is not None and got.site == "step"


def hang(rank: int, op: str) -> Event:
    fields = {"detector": "watchdog", "seq": 51, "op": op, "timeout_ms": 600000}
    return Event(kind="hang_detected", ref=SourceRef("job.log", next(_n)), text="timeout", parser="test",
                 rank=rank, fields=fields)


def test_one_stack_in_a_section_names_its_rank_against_peers_known_by_timeouts() -> None:
    save = stack(MAIN, ("/srv/app/loop.py", 81, "run", "store.save_checkpoint(step)"),
                 ("/srv/app/store.py", 30, "save_checkpoint", "dist.barrier()"), tail=c10d("barrier"))
    got = {r["rank"]: r for r in build([exc(0, *save, "Timed out"), hang(1, "ALLREDUCE")])
           .fact("collective_call").to_dict(orient="records")}
    assert got[0]["odd_site"] and got[0]["site"] == "section"
    assert got[1]["call"] == "ALLREDUCE" and got[1]["site"] is None and not got[1]["odd_site"]


def test_one_stack_at_a_barrier_or_in_the_step_names_nobody() -> None:
    end = stack(MAIN, ("/srv/app/loop.py", 75, "run", "dist.barrier()"), tail=c10d("barrier"))
    assert build([exc(0, *end, "Timed out"), hang(1, "ALLREDUCE")]).fact("collective_call").empty


def test_a_ctrl_c_in_backward_shows_where_the_rank_waited() -> None:
    """The KeyboardInterrupt of a stopped hang is a stack snapshot: a rank interrupted in backward waited in
    DDP's gradient reduction, unlike a rank whose own error ended it there."""
    back = stack(MAIN, ("/srv/app/loop.py", 60, "run", "loss.backward()"),
                 (f"{LIB}/autograd/__init__.py", 280, "backward", "_engine_run_backward("))
    end = stack(MAIN, ("/srv/app/loop.py", 75, "run", "dist.barrier()"), tail=c10d("barrier"))

    def stopped(rank: int, frames: list[str], sources: list[str]) -> Event:
        fields = {"exc_type": "KeyboardInterrupt", "message": None, "frames": frames, "sources": sources}
        return Event(kind="exception", ref=SourceRef("job.log", next(_n)), text="KeyboardInterrupt",
                     parser="test", rank=rank, fields=fields)

    got = {r["rank"]: r for r in build([stopped(0, *back), stopped(1, *end)])
           .fact("collective_call").to_dict(orient="records")}
    assert (got[0]["call"], got[0]["site"], got[0]["odd_site"]) == ("backward", "step", False)
    assert (got[1]["call"], got[1]["site"], got[1]["odd_site"]) == ("barrier", "boundary", True)


DDP = f"{LIB}/nn/parallel/distributed.py"
MODULE = f"{LIB}/nn/modules/module.py"
# DDP's forward broadcasting the module's buffers (torch/nn/parallel/distributed.py `_pre_forward`).
DDP_FORWARD_TAIL = (
    (MODULE, 1751, "_call_impl", "return forward_call(*args, **kwargs)"),
    (DDP, 1640, "forward", "inputs, kwargs = self._pre_forward(*inputs, **kwargs)"),
    (DDP, 1535, "_pre_forward", "self._sync_buffers()"),
    (DDP, 2190, "_sync_buffers", "self._sync_module_buffers(authoritative_rank)"),
    (DDP, 2194, "_sync_module_buffers", "self._default_broadcast_coalesced(authoritative_rank=r)"),
    (DDP, 2215, "_default_broadcast_coalesced", "self._distributed_broadcast_coalesced(bufs, size, r)"),
    (DDP, 2131, "_distributed_broadcast_coalesced", "dist._broadcast_coalesced("),
)


def test_ddp_buffer_broadcast_before_forward_is_a_broadcast_in_the_step() -> None:
    """DDP's forward broadcasts the module's buffers from rank 0 with `dist._broadcast_coalesced`, a C++
    binding with no frame in distributed_c10d.py."""
    f, s = stack(MAIN, ("/srv/app/loop.py", 61, "run", "out = model(batch)"), tail=DDP_FORWARD_TAIL)
    got = site(f, s)
    assert (got.call, got.entry, got.site) == ("broadcast", callsite.DDP_FORWARD, "step")
    assert got.user_frame == "loop.py:61 in run"


def test_ddp_forward_broadcast_and_backward_are_one_step_a_barrier_is_not() -> None:
    """A rank still in DDP's forward buffer broadcast while its peers are in backward is in the same step
    (a peer died mid-step); a rank in a barrier while the others are in the step went elsewhere."""
    fwd = stack(MAIN, ("/srv/app/loop.py", 61, "run", "out = model(batch)"), tail=DDP_FORWARD_TAIL)
    back = stack(MAIN, ("/srv/app/loop.py", 63, "run", "loss.backward()"),
                 (f"{LIB}/autograd/__init__.py", 280, "backward", "_engine_run_backward("))
    bar = stack(MAIN, ("/srv/app/loop.py", 80, "run", "dist.barrier()"), tail=c10d("barrier"))
    closed = "Connection closed by peer [10.1.1.2]:3301"
    same = build([exc(0, *back, closed), exc(1, *fwd, closed), exc(2, *back, closed)]).fact("collective_call")
    assert not same["minority"].any()
    timeout = "Timed out waiting 600000ms for recv operation to complete"
    evs = [exc(0, *bar, timeout), exc(1, *fwd, timeout), exc(2, *fwd, timeout), exc(3, *back, timeout)]
    odd = build(evs).fact("collective_call").query("minority")["rank"].tolist()
    assert odd == [0]


def test_a_module_forward_without_ddp_frames_waits_in_no_collective() -> None:
    f, s = stack(MAIN, ("/srv/app/loop.py", 61, "run", "out = model(batch)"), tail=(
        (MODULE, 1751, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{LIB}/nn/modules/linear.py", 125, "forward", "return F.linear(input, self.weight, self.bias)"),
    ))
    assert callsite.call_site(f, s) is None


def test_fsdp2_forward_all_gather_through_dynamo_wrapper_is_the_step() -> None:
    # FSDP2's forward hook runs under torch._disable_dynamo: TorchDynamo's `eval_frame.py` wrapper (frame
    # evaluation, not a model evaluation) sits between the module call and FSDP's all-gather.
    f, s = stack(
        ("/srv/app/pretrain.py", 61, "<module>", "logits = model(x)"),
        (f"{LIB}/nn/modules/module.py", 1811, "inner", "args_result = hook(self, args)"),
        (f"{LIB}/_dynamo/eval_frame.py", 1446, "_fn", "return fn(*args, **kwargs)"),
        (f"{LIB}/distributed/fsdp/_fully_shard/_fsdp_state.py", 314, "_pre_forward",
         "args, kwargs = self._fsdp_param_group.pre_forward(module, args, kwargs)"),
        (f"{LIB}/utils/_contextlib.py", 124, "decorate_context", "return func(*args, **kwargs)"),
        (f"{LIB}/distributed/fsdp/_fully_shard/_fsdp_collectives.py", 364, "foreach_all_gather",
         "all_gather_work = all_gather_comm("),
        tail=c10d("all_gather_single", 4394),
    )
    got = site(f, s)
    assert (got.call, got.site) == ("all_gather_single", "step")
    assert "_pre_forward" in str(got.reason)


def test_a_user_function_named_for_evaluation_is_still_a_section() -> None:
    f, s = stack(MAIN, ("/srv/app/eval_frame.py", 8, "score", "dist.all_reduce(hits)"),
                 tail=c10d("all_reduce"))
    assert site(f, s).site == "section"


def test_a_forwarded_group_parameter_is_not_a_subgroup() -> None:
    # Lightning's `_sync_ddp` sets `group = torch.distributed.group.WORLD if group is None else group` and
    # calls `torch.distributed.barrier(group=group)` (lightning/fabric/utilities/distributed.py): a wrapper
    # passing its own `group` parameter on says nothing about which group its caller chose.
    lib = "/opt/env/lib/python3.10/site-packages/lightning/fabric/utilities/distributed.py"
    sync = (lib, 213, "_sync_ddp", "torch.distributed.barrier(group=group)")
    f, s = stack(MAIN, sync, tail=c10d("barrier"))
    assert not callsite.subgroup_call(f, s)
    named = ("/srv/app/tp.py", 40, "sync", "dist.all_reduce(t, group=self.tp_group)")
    f, s = stack(MAIN, named, tail=c10d("all_reduce"))
    assert callsite.subgroup_call(f, s)


def test_fsdps_own_group_argument_is_not_a_subgroup_the_program_chose() -> None:
    # FSDP passes the process group it was given (the default one) to every collective it makes
    # (torch/distributed/fsdp/_flat_param.py `_all_gather_flat_param`, torch 2.2): the program's call is
    # `model(x)`, with no group
    fsdp = f"{LIB}/distributed/fsdp/_flat_param.py"
    fwd = ("/srv/app/train.py", 163, "train", "out = model(x)")
    gather = (fsdp, 1389, "_all_gather_flat_param",
              "work = dist.all_gather(tensor_list, sharded_flat_param, group=pg)")
    f, s = stack(MAIN, fwd, gather, tail=c10d("all_gather"))
    assert not callsite.subgroup_call(f, s)
    tp = ("/srv/app/train.py", 170, "train", "dist.all_reduce(stat, group=pair_group)")
    f, s = stack(MAIN, tp, tail=c10d("all_reduce"))
    assert callsite.subgroup_call(f, s)


def test_fsdp1_gloo_all_gather_group_argument_is_not_a_subgroup() -> None:
    # FSDP1 on gloo all-gathers with `dist.all_gather(tensor_list, sharded_flat_param, group=pg)`
    # (torch/distributed/fsdp/_flat_param.py `_all_gather_flat_param`, torch 2.3-2.13; a 2.5.1 run of
    # tools/probe62): `pg` is the group FSDP was built with, the world unless the program gave another.
    lib = "/opt/env/lib/python3.13/site-packages/torch/distributed/fsdp/_flat_param.py"
    fsdp = (lib, 1401, "_all_gather_flat_param", "dist.all_gather(tensor_list, sharded_flat_param, group=pg)")
    f, s = stack(MAIN, fsdp, tail=c10d("all_gather"))
    assert not callsite.subgroup_call(f, s)


def test_a_collective_inside_lightnings_sigterm_handler_is_not_where_the_rank_waited() -> None:
    # Lightning's SIGTERM handler broadcasts the stop to the other ranks
    # (lightning/pytorch/trainer/connectors/signal_connector.py `_sigterm_notifier_fn`); the frames under it
    # are what the rank was doing.
    lib = "/opt/env/lib/python3.10/site-packages/lightning/pytorch/trainer/connectors/signal_connector.py"
    user = ("/srv/app/model.py", 118, "training_step", "time.sleep(self.delay)")
    handler = ((lib, 36, "__call__", "signal_handler(signum, frame)"),
               (lib, 118, "_sigterm_notifier_fn", "dist.broadcast(sigterm_tensor, src=0)"))
    f, s = stack(MAIN, user, *handler, tail=c10d("broadcast"))
    assert callsite.blocking_call(f) is None
    assert callsite.call_site(f, s) is None
    f, s = stack(MAIN, ("/srv/app/loop.py", 52, "run", "dist.all_reduce(flat_grad)"), tail=c10d("all_reduce"))
    assert callsite.blocking_call(f) is not None


PIPE = f"{LIB}/distributed/pipelining/schedules.py"


def pipeline_wait(waits_on: str) -> tuple[list[str], list[str]]:
    """A stage's stack as torch.distributed.pipelining's schedules leave it: `_wait_batch_p2p` called with
    what it waits for, then `work.wait()` (torch/distributed/pipelining/schedules.py, torch 2.13)."""
    return stack(("/srv/app/train_pp.py", 97, "<module>", "schedule.step()"),
                 tail=((PIPE, 785, "step", "self._step_microbatches("),
                       (PIPE, 1081, "_step_microbatches", waits_on),
                       (PIPE, 683, "_wait_batch_p2p", "w.wait()")))


def test_a_pipelining_schedule_waiting_on_its_sends_is_in_a_send() -> None:
    got = site(*pipeline_wait("_wait_batch_p2p(send_work)"))
    assert (got.call, got.entry, got.user_frame) == ("send", "send", "train_pp.py:97 in <module>")


def test_a_pipelining_schedule_waiting_on_its_recvs_is_in_a_recv() -> None:
    fwd = '_wait_batch_p2p(_batch_p2p(fwd_recvs, desc="fwd_recv"))'
    assert site(*pipeline_wait(fwd)).call == "recv"
    bwd = "_wait_batch_p2p(self.bwd_recv_ops.pop((stage_idx, mb_index)))"
    assert site(*pipeline_wait(bwd)).call == "recv"


def test_a_pipelining_wait_that_names_no_direction_is_a_point_to_point_wait() -> None:
    assert site(*pipeline_wait("_wait_batch_p2p(work)")).call == callsite.PIPELINE_P2P
    mixed = '_wait_batch_p2p(_batch_p2p(fwd_sends + bwd_recvs, desc="fwd_send_bwd_recv"))'
    assert site(*pipeline_wait(mixed)).call == callsite.PIPELINE_P2P


def test_a_pipelining_stage_that_raised_in_its_forward_waits_in_nothing() -> None:
    f, s = stack(("/srv/app/train_pp.py", 97, "<module>", "schedule.step()"),
                 tail=((PIPE, 785, "step", "self._step_microbatches("),
                       (f"{LIB}/distributed/pipelining/stage.py", 893, "forward_one_chunk",
                        "output = self.forward_maybe_with_nosync(*composite_args, **composite_kwargs)")))
    assert callsite.call_site(f, s) is None
DS = "/opt/env/lib/python3.10/site-packages/deepspeed"


def test_deepspeed_pass_through_frames_say_nothing_about_the_phase() -> None:
    # ZeRO-2's gradient all_reduce under `engine.backward`, as DeepSpeed 0.19 prints it: the NVTX decorator's
    # `ret_val = func(...)` (no validation) and deepspeed.comm's `log_wrapper` (no logging section) are
    # pass-through frames, so the step's own `backward` decides
    f, s = stack(("/srv/app/train.py", 125, "<module>", "engine.backward(loss)"),
                 (f"{DS}/utils/nvtx.py", 33, "wrapped_fn", "ret_val = func(*args, **kwargs)"),
                 (f"{DS}/runtime/engine.py", 3431, "backward", "self._backward_epilogue()"),
                 (f"{DS}/runtime/zero/stage_1_and_2.py", 2384, "allreduce_bucket",
                  "dist.all_reduce(tensor_to_allreduce, group=process_group)"),
                 (f"{DS}/comm/comm.py", 129, "log_wrapper", "return func(*args, **kwargs)"),
                 (f"{DS}/comm/comm.py", 710, "all_reduce",
                  "return cdb.all_reduce(tensor, op, group, async_op)"),
                 (f"{DS}/comm/torch.py", 290, "all_reduce",
                  "return torch.distributed.all_reduce(tensor=tensor, op=op, group=group,"
                  " async_op=async_op)"),
                 tail=c10d("all_reduce"))
    got = site(f, s)
    assert (got.site, got.user_frame) == ("step", "train.py:125 in <module>")
    assert got.reason is not None and "engine.py" in got.reason


def test_a_zero3_parameter_gather_wait_is_a_collective_in_the_step() -> None:
    # ZeRO-3 waits on its async all-gather handle (Work.wait() is C++, no distributed_c10d.py frame) in the
    # forward's parameter fetch; DeepSpeed 0.19 prints these frames on a gloo timeout there
    f, s = stack(("/srv/app/train.py", 123, "<module>", "out = engine(x)"),
                 (f"{DS}/runtime/engine.py", 3007, "forward", "loss = self.module(*inputs, **kwargs)"),
                 (f"{DS}/runtime/zero/parameter_offload.py", 543, "pre_sub_module_forward_function",
                  "param_coordinator.fetch_sub_module(sub_module, forward=True)"),
                 (f"{DS}/runtime/zero/partitioned_param_coordinator.py", 406, "_fetch_sub_module_impl",
                  "self.__inflight_param_registry.pop(param).wait()"),
                 (f"{DS}/runtime/zero/partition_parameters.py", 765, "wait",
                  "instrument_w_nvtx(self.allgather_handle.wait)()"),
                 (f"{DS}/utils/nvtx.py", 33, "wrapped_fn", "ret_val = func(*args, **kwargs)"))
    got = site(f, s)
    assert (got.call, got.entry, got.site) == ("all_gather", "all_gather", "step")
    assert callsite.blocking_call([f"{DS}/runtime/zero/stage3.py:2100 in wait"]) is None


def test_a_collective_inside_a_compiled_forward_is_not_the_backward() -> None:
    # AOTAutograd runs a torch.compile'd forward through `CompiledFunction.apply`
    # (torch/_functorch/_aot_autograd/runtime_wrappers.py, torch/autograd/function.py `apply`); a collective
    # the compiled graph runs there (a functional all_reduce, dispatched through torch/_ops.py) is in the
    # forward. Only the engine's backward entry (torch/autograd/__init__.py, graph.py) is the backward.
    fwd = ((f"{LIB}/autograd/function.py", 575, "apply", "return super().apply(*args, **kwargs)"),
           (f"{LIB}/_functorch/_aot_autograd/runtime_wrappers.py", 2101, "forward",
            "return CompiledFunction._fwd_fn("),
           ("<eval_with_key>.5", 31, "forward", ""),
           (f"{LIB}/_ops.py", 840, "__call__", "return self._op(*args, **kwargs)"))
    f, _ = stack(MAIN, ("/srv/app/train.py", 77, "train_step", "out = model(batch)"), tail=fwd)
    assert callsite.blocking_call(f) is None
    bwd = ((f"{LIB}/_tensor.py", 581, "backward", "torch.autograd.backward("),
           (f"{LIB}/autograd/__init__.py", 347, "backward", "_engine_run_backward("),
           (f"{LIB}/autograd/graph.py", 825, "_engine_run_backward",
            "return Variable._execution_engine.run_backward("))
    f, _ = stack(MAIN, ("/srv/app/train.py", 79, "train_step", "loss.backward()"), tail=bwd)
    found = callsite.blocking_call(f)
    assert found is not None and found[2] == "backward"


FUNCOL = f"{LIB}/distributed/_functional_collectives.py"


def test_a_wait_on_an_earlier_functional_collective_is_a_collective() -> None:
    # torch/distributed/_functional_collectives.py: a funcol op returns an AsyncCollectiveTensor; the rank
    # blocks where the tensor is first used (`__torch_dispatch__` -> `unwrap` -> `trigger_wait` ->
    # `wait_tensor`) or in an explicit `wait_tensor`, with no distributed_c10d.py frame.
    f, s = stack(MAIN, ("/srv/app/metrics.py", 21, "sum_tokens", "return funcol.wait_tensor(x)"),
                 tail=((FUNCOL, 142, "wait_tensor", "return torch.ops._c10d_functional.wait_tensor(tensor)"),
                       (f"{LIB}/_ops.py", 1279, "__call__", "return self._op(*args, **kwargs)"),
                       (FUNCOL, 1155, "AsyncCollectiveTensor.__torch_dispatch__", "unwrapped = ..."),
                       (FUNCOL, 1143, "unwrap", "return e.trigger_wait()"),
                       (FUNCOL, 1115, "trigger_wait", "out = wait_tensor(self.elem)"),
                       (FUNCOL, 142, "wait_tensor", "return torch.ops._c10d_functional.wait_tensor(tensor)")))
    got = site(f, s)
    assert (got.call, got.entry) == ("wait_tensor", "wait_tensor")
    assert got.user_frame == "metrics.py:21 in sum_tokens"


def test_functional_collectives_are_the_c10d_op_they_launch() -> None:
    for func, op in (("all_reduce", "all_reduce"), ("all_gather_tensor", "all_gather_into_tensor"),
                     ("reduce_scatter_tensor", "reduce_scatter_tensor"),
                     ("all_to_all_single", "all_to_all_single"), ("broadcast", "broadcast")):
        # Under tracing `_maybe_wrap_tensor` waits at once: the wait inside the op is that op's.
        f, s = stack(MAIN, ("/srv/app/loop.py", 52, "run", f"y = funcol.{func}(x, group=pg)"),
                     tail=((FUNCOL, 170, func, "return _maybe_wrap_tensor(tensor)"),
                           (FUNCOL, 1404, "_maybe_wrap_tensor", "return wait_tensor(self)"),
                           (FUNCOL, 142, "wait_tensor", "return torch.ops._c10d_functional.wait_tensor(t)")))
        found = callsite.blocking_call(f, s)
        assert found is not None and (found[2], found[3]) == (op, op), func
    # Its private helpers are no collective of their own.
    f, _ = stack(MAIN, tail=((FUNCOL, 1260, "_resolve_group", "raise ValueError(...)"),))
    assert callsite.blocking_call(f) is None


def test_torchtitans_tracing_span_decorator_says_nothing_about_the_phase() -> None:
    # torchtitan/observability/structured_logger/structured_logging.py `log_trace_span` decorates the
    # trainer's methods: its `sync_wrapper` times the call, the file's "logging" is no logging section.
    titan = "/srv/env/lib/python3.11/site-packages/torchtitan"
    f, s = stack(
        ("/srv/app/run.py", 40, "<module>", "trainer.train()"),
        (f"{titan}/trainer.py", 925, "train_step", "loss = self.forward_backward_step(batch)"),
        (f"{titan}/observability/structured_logger/structured_logging.py", 429, "sync_wrapper",
         "return func(*args, **kwargs)"),
        (f"{titan}/trainer.py", 814, "_forward_backward_body", "pred = model(inputs)"),
        (f"{LIB}/distributed/fsdp/_fully_shard/_fsdp_collectives.py", 364, "foreach_all_gather",
         "all_gather_work = all_gather_comm("),
        tail=c10d("all_gather_single", 4394),
    )
    assert site(f, s).site == "step"


LIGHTNING_SIGNAL = ("/opt/env/lib/python3.10/site-packages/lightning/pytorch/trainer/connectors/"
                    "signal_connector.py")


def test_stop_that_interrupted_the_rank_in_its_own_code_is_outside() -> None:
    # Lightning's SIGTERM handler broadcasts from inside the frame it interrupted: the frames above it
    # are where the rank was (a sleep in its training_step), in no collective.
    frames, _ = stack(MAIN, ("/srv/app/model.py", 100, "training_step", "time.sleep(75)"),
                      tail=((LIGHTNING_SIGNAL, 36, "__call__", "signal_handler(signum, frame)"),
                            (LIGHTNING_SIGNAL, 118, "_sigterm_notifier_fn", "dist.broadcast(t, src=0)"),
                            *c10d("broadcast")))
    assert callsite.stopped_outside(frames, "RuntimeError") == (
        "model.py:100 in training_step", "Lightning's SIGTERM handler")


def test_stop_that_interrupted_a_wait_or_no_stop_is_not_outside() -> None:
    in_collective, _ = stack(MAIN, ("/srv/app/model.py", 90, "sync", "dist.all_reduce(t)"),
                             tail=(*c10d("all_reduce"),
                                   (LIGHTNING_SIGNAL, 118, "_sigterm_notifier_fn", "dist.broadcast(t, 0)"),
                                   *c10d("broadcast")))
    in_loader, _ = stack(MAIN, (f"{LIB}/utils/data/dataloader.py", 1295, "_get_data", "self._try_get_data()"))
    own_error, _ = stack(MAIN, ("/srv/app/model.py", 12, "load", "open(path)"))
    assert (callsite.stopped_outside(in_collective, "RuntimeError"),
            callsite.stopped_outside(in_loader, "KeyboardInterrupt"),
            callsite.stopped_outside(own_error, "FileNotFoundError"),
            callsite.stopped_outside(own_error, "KeyboardInterrupt")) == (
        None, None, None, ("model.py:12 in load", "KeyboardInterrupt"))
