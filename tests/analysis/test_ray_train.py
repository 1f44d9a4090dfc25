"""Ray Train driver consoles (a TorchTrainer on gloo): the worker lines behind `(RayTrainWorker pid=...)`."""
# ruff: noqa: E501 - console lines stay whole, as the Ray driver prints them

from __future__ import annotations

from pathlib import Path

from hanglens import api

# Written here from log-formats.md section 9.2 (Ray's `(<Actor> pid=<pid>, ip=<ip>) ` worker prefix) and the
# Ray Train controller's worker list (`- (ip=<ip>, pid=<pid>) world_rank=<r>, ...`), with values of our own.
WORKERS = """\
(TrainController pid=6100) Started training worker group of size 3:
(TrainController pid=6100) - (ip=10.0.0.4, pid=6210) world_rank=0, local_rank=0, node_rank=0
(TrainController pid=6100) - (ip=10.0.0.4, pid=6235) world_rank=1, local_rank=1, node_rank=0
(TrainController pid=6100) - (ip=10.0.0.4, pid=6261) world_rank=2, local_rank=2, node_rank=0
(RayTrainWorker pid=6210, ip=10.0.0.4) Wrapping provided model in DistributedDataParallel.
"""

GLOO_TIMEOUT = ("RuntimeError: [/opt/src/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out "
                "waiting 20000ms for recv operation to complete")


def _verdict(tmp_path: Path, text: str) -> dict:
    (tmp_path / "driver.log").write_text(text)
    return api.analyze([tmp_path]).to_dict()["verdict"]


def test_worker_that_logged_a_skip_and_no_wait_is_the_divergent_one(tmp_path: Path) -> None:
    # Rank 2 skips the last eval all_reduce (its training function returns); ranks 0 and 1 time out in it.
    text = WORKERS + f"""\
(RayTrainWorker pid=6210, ip=10.0.0.4) [rank 0] epoch 4 done
(RayTrainWorker pid=6261, ip=10.0.0.4) 2026-03-02 09:12:44,101 WARNING eval: rank 2: eval loss is nan on this shard, skipping metric sync
(RayTrainWorker pid=6261, ip=10.0.0.4) [rank 2] epoch 5 done
(RayTrainWorker pid=6210, ip=10.0.0.4) Error in training function:
(RayTrainWorker pid=6210, ip=10.0.0.4) Traceback (most recent call last):
(RayTrainWorker pid=6210, ip=10.0.0.4)   File "/home/user/proj/train.py", line 97, in train_loop_per_worker
(RayTrainWorker pid=6210, ip=10.0.0.4)     dist.all_reduce(val)
(RayTrainWorker pid=6210, ip=10.0.0.4)   File "/home/user/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 3252, in all_reduce
(RayTrainWorker pid=6210, ip=10.0.0.4)     work.wait()
(RayTrainWorker pid=6210, ip=10.0.0.4) {GLOO_TIMEOUT}
(RayTrainWorker pid=6235, ip=10.0.0.4) Error in training function:
(RayTrainWorker pid=6235, ip=10.0.0.4) Traceback (most recent call last):
(RayTrainWorker pid=6235, ip=10.0.0.4)   File "/home/user/proj/train.py", line 97, in train_loop_per_worker
(RayTrainWorker pid=6235, ip=10.0.0.4)     dist.all_reduce(val)
(RayTrainWorker pid=6235, ip=10.0.0.4)   File "/home/user/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 3252, in all_reduce
(RayTrainWorker pid=6235, ip=10.0.0.4)     work.wait()
(RayTrainWorker pid=6235, ip=10.0.0.4) {GLOO_TIMEOUT}
"""
    v = _verdict(tmp_path, text)
    assert v["category"] == "control_flow_divergence"
    assert v["culprit_ranks"] == [2]


def test_gloo_size_check_in_rays_terminate_handler_is_read(tmp_path: Path) -> None:
    # Rank 2 ran out of batches and entered the eval all_reduce (4 bytes) while rank 0 sent it a DDP bucket:
    # Ray's own C++ terminate handler prints gloo's uncaught EnforceNotMet, with no c10d word in the line.
    text = WORKERS + """\
(RayTrainWorker pid=6261, ip=10.0.0.4) [2026-03-02 09:20:05,318 E 6261 6377] logging.cc:118: Unhandled exception: N4gloo13EnforceNotMetE. what(): [enforce fail at /opt/src/third_party/gloo/gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 516 vs 4. Received data size doesn't match expected size. Is there a distributed collective mismatch in your code?
(RayTrainWorker pid=6261, ip=10.0.0.4) *** SIGABRT received at time=1772443205 on cpu 0 ***
(RayTrainWorker pid=6210, ip=10.0.0.4) Error in training function:
(RayTrainWorker pid=6210, ip=10.0.0.4) Traceback (most recent call last):
(RayTrainWorker pid=6210, ip=10.0.0.4)   File "/home/user/proj/train.py", line 81, in train_loop_per_worker
(RayTrainWorker pid=6210, ip=10.0.0.4)     loss.backward()
(RayTrainWorker pid=6210, ip=10.0.0.4)   File "/home/user/venv/lib/python3.11/site-packages/torch/_tensor.py", line 623, in backward
(RayTrainWorker pid=6210, ip=10.0.0.4)     torch.autograd.backward(
(RayTrainWorker pid=6210, ip=10.0.0.4) RuntimeError: [/opt/src/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error [127.0.0.1]:40112: Connection reset by peer.
"""
    v = _verdict(tmp_path, text)
    assert v["category"] in ("control_flow_divergence", "collective_mismatch")
    assert 2 in v["culprit_ranks"] + v["suspect_ranks"]
