"""The fact tables analysis produces: names, columns and meaning (rules are validated against these)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FactSpec:
    name: str
    columns: tuple[str, ...]
    doc: str


_EVIDENCE = ("path", "line")

FACT_SPECS: dict[str, FactSpec] = {
    s.name: s
    for s in (
        FactSpec(
            "collective_state",
            (
                "pg",
                "rank",
                "host",
                "last_enqueued",
                "last_started",
                "last_completed",
                "timed_out_seq",
                "op",
                "numel_in",
                "numel_out",
                "timeout_ms",
                "source",
                *_EVIDENCE,
            ),
            "Per (process group, rank): the newest sequence numbers this rank enqueued, started, completed "
            "and timed out on, with the op and sizes of the timed-out work.",
        ),
        FactSpec(
            "pg_enqueue_lag",
            (
                "pg", "rank", "host", "last_enqueued", "pg_max_enqueued", "lag", "ahead", "basis", "idle",
                *_EVIDENCE,
            ),
            "Ranks behind (lag > 0) or ahead (ahead > 0) of their process group's majority sequence number; "
            "`idle` when the rank's own status says it had completed all it enqueued on that group (not "
            "waiting in one of its collectives), None when its status does not say.",
        ),
        FactSpec(
            "barrier_report",
            ("rank", "subgroup", "missing", "printed", "late", "members", "waits_in_subgroup", "timeout_ms",
             *_EVIDENCE),
            "Monitored-barrier reports naming missing ranks: `subgroup` when the printed reporter rank is "
            "not the writer's global rank (ProcessGroupGloo numbers a `new_group` by its group ranks), "
            "`missing` the missing ranks as global ranks (a subgroup's group ranks placed by new_group's "
            "sorted membership; None where that cannot be told), `printed` as printed, `members` the "
            "subgroup's global ranks its reports show present; `waits_in_subgroup`: a default-group report "
            "whose missing ranks all sit in a subgroup's barrier; `late` the missing ranks and, where rank 0 "
            "reported only the first missing rank, the later ranks that never said they reached the barrier "
            "and were stopped with no error of their own (hanglens/analysis/barriers.py).",
        ),
        FactSpec(
            "missing_ranks",
            ("rank", "world_size", "basis"),
            "Ranks that never appear in any log although the world size is known and every rank that does "
            "appear has a file of its own (absence in an excerpt is not evidence).",
        ),
        FactSpec(
            "store_barrier_missing",
            ("rank", "world_size", "joined", "key", *_EVIDENCE),
            "Ranks that never reached a store-based barrier, told by its own count: each rank that "
            "arrived added itself to the key before waiting (distributed_c10d.py `_store_based_barrier`), "
            "so when the ranks reporting the timeout for one key are as many as `worker_count` / "
            "`num_workers_joined` (log-formats.md section 3.7), they are every rank that arrived and the "
            "rest of range(world_size) never did; one row per such rank (evidence: one of the reports).",
        ),
        FactSpec(
            "nccl_init_pending",
            ("comm_id", "comm_rank", "nranks", "rank", "started", "missing", *_EVIDENCE),
            "Per rank of an NCCL communicator whose `Init START` was printed and `Init COMPLETE` never: "
            "`started` false marks the ranks that never began its init; `rank` is set only for the "
            "world-sized communicator.",
        ),
        FactSpec(
            "init_key_missing",
            ("rank", "host", "key", "waiting", "timeout_ms", *_EVIDENCE),
            "Ranks whose gloo rendezvous key (`<rank>`, under the default process group's prefix) their "
            "peers timed out waiting for in init_process_group (`wait timeout after <ms>ms, keys: ...`): the "
            "rank never published its address, i.e. never reached init_process_group in time "
            "(gloo/transport/tcp/context.cc createAndConnectAllPairs); `waiting` counts the errors naming "
            "it.",
        ),
        FactSpec(
            "vanished_stream",
            ("rank", "host", "last_step", "total", "stream", "reporters", "lost", *_EVIDENCE),
            "Ranks of a node's stream (its console file, `srun -l` task or pdsh host) whose output stopped "
            "mid-run with no error, exit report or finish line, while another node's stream reports the "
            "store going away after the same progress (closed connection, RendezvousConnectionError): the "
            "node that hosted the store was lost (failure-signatures.md section 17.7); or whose workers "
            "lose their connections to peers (`Connection closed by peer`, section 17 item 2): a node lost "
            "that did not host it. `lost` is store (every reporting node lost the store) or peers; "
            "`reporters` counts the streams that saw it go.",
        ),
        FactSpec(
            "collective_disagreement",
            (
                "pg",
                "seq",
                "rank",
                "host",
                "op",
                "numel_in",
                "numel_out",
                "shape",
                "dtype",
                "differs",
                "op_differs",
                "size_differs",
                "minority",
                *_EVIDENCE,
            ),
            "Ranks that disagree at the same (pg, seq): op type, numel, shape or dtype; `minority` marks "
            "the side that differs from most ranks (none when no signature has a majority).",
        ),
        FactSpec(
            "stopped_outside_collective",
            ("rank", "host", "user_frame", "stopped_by", *_EVIDENCE),
            "Ranks whose traceback a stop interrupted (Lightning's SIGTERM handler run by torchrun's "
            "closing SIGTERM, or a KeyboardInterrupt) in their own work: no collective, barrier, DDP "
            "reducer or DataLoader fetch among the interrupted frames; `user_frame` is the innermost "
            "frame of the program's own, `stopped_by` what interrupted it.",
        ),
        FactSpec(
            "collective_call",
            ("rank", "host", "call", "entry", "user_frame", "calls", "places", "minority", "majority_went_on",
             "site_minority", "site", "site_reason", "odd_site", "site_differs", "subgroup", *_EVIDENCE),
            "The torch.distributed function each rank was inside when it failed (from its traceback or "
            "its main thread's py-spy stack dump), e.g. all_reduce vs barrier, or `backward` (DDP's "
            "gradient all_reduce runs under autograd); `entry` is the function the program called "
            "(broadcast_object_list around a broadcast); `minority` marks ranks whose call differs from "
            "most ranks'; `majority_went_on` marks a minority rank whose majority waits at later lines of "
            "the same function (they completed the call this rank is in); `calls` counts the distinct "
            "calls across ranks, `places` the distinct user frames they were called from; `site_minority` "
            "marks ranks "
            "called from another place (user frame) than most ranks (blocked elsewhere, not still "
            "working). `site` says where the call came from, read from the frames the sides do not "
            "share: step (the training step: gradients, "
            "backward, loss), boundary (a barrier outside the step), section (checkpoint, evaluation, "
            "logging, a main-process-only block, an object collective) or empty; `site_reason` names "
            "the frame; `odd_site` marks, when no call has a majority, the side whose site is further "
            "from the step than every other side's. `site_differs` marks a rank whose site is not the one "
            "a strict majority of the ranks show "
            "(another line of the same step does not count; where most ranks share one "
            "unrecognised user frame, a rank whose site is recognised differs). `subgroup` marks a "
            "call whose source line passes a `group=` other than None or WORLD: that rank waits for the "
            "members of a subgroup the logs do not list, not for the world.",
        ),
        FactSpec(
            "mesh_group",
            ("rank", "host", "dim", "members", "size", "world", "source"),
            "Per rank and device-mesh dimension, the members of its group along that dimension (the ranks "
            "sharing every other coordinate; torch/distributed/device_mesh.py lays ranks out row-major), "
            "read from a printed DeviceMesh, each rank's logged coordinates (`[dp=1 tp=0]`) or a mesh "
            "shape the ranks state alike whose product is the world size: `source` says which. `world`: "
            "the group holds every rank (a one-dimensional mesh), so it is the only group along that "
            "dimension. Empty when the logs state no mesh.",
        ),
        FactSpec(
            "mesh_group_split",
            ("rank", "host", "dim", "members", "size", "call", "user_frame", "side", "how", "source",
             *_EVIDENCE),
            "The members of a device-mesh group whose ranks were blocked in different collectives (call "
            "or calling line), from collective_call and mesh_group: the group a rank waits on is the one "
            "its `group=` expression names (`tp_group`; `how` name) or else the only dimension whose "
            "other members all wait in subgroup calls too, not all in the same one (`how` calls). `side`: "
            "majority (where a strict majority of the group's members are), odd (the other members), tie "
            "(no majority: a group split evenly, two members on two sides); `source` as in mesh_group; "
            "path and line cite the member's stack.",
        ),
        FactSpec(
            "mesh_group_waiting",
            ("rank", "host", "dim", "members", "size", "call", "user_frame", "side", "source", *_EVIDENCE),
            "Device-mesh groups whose members with a stack (collective_call) all wait at one place, more "
            "of them than not, while the other members left no stack: `side` waiting (in the call) or "
            "missing (the members the group waits for: never in a collective when the job failed). Not "
            "read where the call's `group=` names another dimension. path and line cite a waiting "
            "member's stack (empty for a missing one).",
        ),
        FactSpec(
            "mesh_disagreement",
            ("rank", "host", "mesh", "meshes", "odd", "odd_rank", *_EVIDENCE),
            "The DeviceMeshes the ranks printed, when they are not all the same mesh: one row per distinct "
            "statement of a rank (or of lines no rank is known for), `mesh` its dimensions and sizes "
            "(`dp=2, tp=2`), `meshes` how many different meshes the job printed. Only meshes of the whole "
            "world are compared (a printed sub-mesh such as `mesh[\"tp\"]` has fewer ranks). `odd` (and "
            "`odd_rank`, its rank) marks a rank whose mesh differs from the one a strict majority of at "
            "least two other ranks printed: init_device_mesh builds one group per slice of the mesh it is "
            "given (torch/distributed/device_mesh.py), so a rank given another shape or dimension order "
            "pairs its collectives with other ranks than its peers expect.",
        ),
        FactSpec(
            "transfer_size_error",
            ("rank", "host", "role", "peer", "p2p", "transport", "remote_bytes", "local_bytes", "basis",
             "odd", "elsewhere", "place", "others_place", *_EVIDENCE),
            "Both ends of a transfer whose sizes disagree (NCCL `message truncated`, gloo's "
            "`op.preamble.length <= op.nbytes`): the receiver that detected it (role receiver) and, when "
            "the logs single it out, the rank that sent (role sender: the only rank behind the peer address "
            "with a point-to-point op, or the only rank blocked in a send; in a gloo collective the other "
            "rank of two or the all_reduce ring neighbour rank + 1, or, when every rank of three or more but "
            "one failed the check, that one); `odd` marks the end whose size differs "
            "from what a majority of ranks posted (Flight Recorder), when the other end posted the "
            "majority's, or that one rank, or the one sender two or more NCCL receivers' truncation reports "
            "name (with the same sizes); `p2p` says an end was in send/recv; `transport` nccl or gloo; "
            "remote_bytes is what was "
            "sent, local_bytes "
            "what the receiver posted; `elsewhere` marks the end whose own stack is at another line of "
            "the program (`place`) than every rank outside the transfer (`others_place`, one line for all "
            "of them), while the other end's stack is absent or at that line (hanglens/analysis/"
            "transfers.py mark_places).",
        ),
        FactSpec(
            "gradient_sync_split",
            ("rank", "host", "in_sync", "call", "sender", "minority", "basis", *_EVIDENCE),
            "When gloo rejected a message sent by a rank blocked in DDP's gradient all_reduce (`backward`): "
            "bucket sizes are the same on every rank (DDP verifies parameter shapes at construction), so the "
            "receiver was in another collective. One row per rank whose side is known: the receiver and "
            "every rank with a stack (`in_sync`: in the gradient all_reduce; `call`: what its stack shows; "
            "`sender`: the rank whose message was rejected). `minority` marks the side held by fewer than "
            "half of these ranks while the other side has two at least (hanglens/analysis/transfers.py).",
        ),
        FactSpec(
            "ib_peer",
            ("peer", "rank", "host", "reporters", "peers_named", "converged", "fanout", *_EVIDENCE),
            "Peers named by NCCL's InfiniBand completion errors: one row per rank behind each peer "
            "address (`Bootstrap : Using` lines; rank None when unmapped), with the number of processes "
            "reporting it; `converged` when two or more reporters all name this one peer; `fanout` when "
            "every error comes from one host's processes and names two or more peers on other hosts "
            "(failure-signatures.md section 9, culprit rules 2 and 3).",
        ),
        FactSpec(
            "socket_peer",
            ("peer", "rank", "host", "reporters", "peers_named", "converged", "fanout", *_EVIDENCE),
            "Peers named by NCCL's socket errors that say the remote end went away (`Call to recv from "
            "<ip><port> failed : Connection reset by peer`, `Connection closed by remote peer`): the columns "
            "of ib_peer, read the same way (failure-signatures.md sections 9 and 17 item 2).",
        ),
        FactSpec(
            "store_link_lost",
            ("rank", "host", "side", "basis", "hosts_lost", "hosts_kept", "time", *_EVIDENCE),
            "Nodes whose launcher's store requests got no answer before their timeout (c10d "
            "`waitForInput: socket ... timed out`, the torchrun agent keeping the rendezvous alive), one row "
            "per rank of each implicated host: `basis` converge (every host but one timed out, two or more: "
            "the one left is the store host, `side` store_host), fanout (the hosts that timed out, while two "
            "or more kept their path: `side` lost), pair (one host timed out, only the store host left: both "
            "hosts, `side` either). A closed connection is a peer's exit; an unanswered one, a path that "
            "stopped carrying packets (failure-signatures.md section 9; hanglens/analysis/transfers.py).",
        ),
        FactSpec(
            "gpu_fault",
            ("rank", "host", "xid", "fault", "pci", "mapped_by", "gpus_known", "host_ranks", "time",
             *_EVIDENCE),
            "NVIDIA driver Xid lines, one row each: `fault` memory_access (Xid 13, 31), hardware (48, 61, "
            "62, 64, 74, 79, 94, 95, 109, 119, 120) or other; `rank` the rank whose GPU the line names, by "
            "its PCI address matched to that rank's NCCL `busId` or its pid to the NCCL envelope's "
            "(`mapped_by` bus_id / pid), or its pid to the one torchrun's failure table gives a rank "
            "(`mapped_by` failure_table), None when no line maps it (log-formats.md sections 3.6, 4.3 and "
            "5.3; hanglens/analysis/gpu.py); `gpus_known`: some NCCL line states the GPU (`busId`) of a rank "
            "on the line's host, so an unmapped line there is about a GPU no rank of these logs used; "
            "`host_ranks`: how many ranks the logs place on the line's host.",
        ),
        FactSpec(
            "recv_wait",
            ("rank", "host", "op", "src", "src_call", "src_waits", "mutual", "ahead", "site", "peer_site",
             "basis", *_EVIDENCE),
            "Ranks blocked in a point-to-point recv or send (`op`) and the rank each waits for (`src`: the "
            "recv's source, the send's destination; a gloo send completes only once its destination posted "
            "the recv, unbound_buffer.cc `waitSend`), read from the rank's own call in its traceback "
            "(`dist.recv(t, src=...)`, `dist.send(t, dst=...)`: a literal, or its rank plus or minus a "
            "constant) or, for a receiver in a 2-rank job, the other rank; gloo's timeouts name no peer. "
            "`src_waits`: that rank is itself blocked in a point-to-point op; `src_call`: what it was "
            "blocked in; `mutual`: it waits for this rank in turn; `ahead`: of a mutual pair, this rank's "
            "call is at a later line of the same function (`site`, `peer_site`: the user frames) "
            "(hanglens/analysis/transfers.py).",
        ),
        FactSpec(
            "progress",
            (
                "rank",
                "host",
                "last_step",
                "max_step",
                "steps_behind",
                "gap",
                "gap_after",
                "stopped_early",
                "majority_step",
                "position",
                *_EVIDENCE,
            ),
            "Last training step each rank reported, gaps in its steps, and ranks that stopped early; "
            "`majority_step` the last step a strict majority (two at least) of the reporting ranks stopped "
            "at, `position` each rank's ahead / behind / same against it (null without such a majority).",
        ),
        FactSpec(
            "job_stopped",
            ("rank", "host", "how", "signal", "reason", "said", "time", "text", "after_finish", *_EVIDENCE),
            "Lines saying the job was stopped from outside (failure-signatures.md sections 16 and 17.4): "
            "`how` agent_signal (torchrun's agent received SIGTERM/SIGINT: `Received 15 death signal`, "
            "`SignalException`), agent_closing (the agent closed its workers while none had failed), "
            "keyboard_interrupt (Ctrl-C) or scheduler_cancel (Slurm `CANCELLED AT`), `reason` the "
            "scheduler's (`TIME LIMIT`, `PREEMPTION`); `said` the same in words; `after_finish` when the "
            "job's output said the run was over before the stop and nothing shows a hang (no failure "
            "line, no rank at a different point, no interrupted stack waiting in torch.distributed, the "
            "DataLoader or the exit path).",
        ),
        FactSpec(
            "silent_hang",
            (
                "rank",
                "host",
                "last_step",
                "first_step",
                "last_epoch",
                "total",
                "last_time",
                "last_phase",
                "last_dist",
                "gap_after",
                "cadence_s",
                "common_step",
                "common_epoch",
                "position",
                "differs",
                "sequence",
                "skipped_after",
                "silent_for_s",
                "first_silent",
                "stalled_start",
                "boundary",
                "no_error",
                "ran_out",
                "unranked_note",
                "quiet_before_stop_s",
                "hung_before_stop",
                "epoch_done",
                "bar_cut",
                "stride",
                "logged_cut",
                "tail_words",
                "odd_tail",
                "mesh_peer_elsewhere",
                *_EVIDENCE,
            ),
            "Where each rank stopped when a job goes quiet (failure-signatures.md section 16): last "
            "progress (step, epoch, total, time), last phase line (checkpoint_save/load, validation, "
            "data_prep) and last distributed line kind; `common_step` (`common_epoch`) the last step every "
            "rank reached; `position` ahead / behind / same against the (epoch, step) most ranks stopped "
            "at, `differs` when not the same or its step sequence differs; `sequence` skipped (no report "
            "for a step its peers printed; `skipped_after` the step before the hole) or extra; "
            "`first_silent` when quiet for more than three of its own step intervals while others printed; "
            "`stalled_start` when its last report is 0 of N right after a completed unit, `boundary` the "
            "phase it stopped at (epoch_start, validation, checkpoint_save, ...); `no_error` when the logs "
            "hold no failure line but the stop itself; `ran_out` when its loop ended (last step = its total) "
            "in the epoch most ranks stopped in, at a smaller total than theirs, while they were still "
            "inside "
            "their loop (uneven shards); `quiet_before_stop_s` the seconds from its newest timed line to "
            "the stop from outside, `hung_before_stop` when that quiet is more than three times the longest "
            "interval between its timed lines since its first progress report (one second at least: the "
            "stamps' resolution). One row with rank null stands for unattributed "
            "output when no rank has its own: its `last_step` is the highest step printed (how far some "
            "rank got; the last line is any rank's), `unranked_note` says so in words. `epoch_done` the "
            "epoch "
            "the rank's newest report says is over (`epoch 3 done`, nothing of its steps after it): its "
            "point is past every step of that epoch. `bar_cut` when its newest report is a progress bar "
            "short of its total on its file's last line, the file's last event: the log ends inside a "
            "running loop (the job did not finish, or was still running when the file was copied). "
            "`stride` the steps between the rank's consecutive logged reports of its last epoch; "
            "`logged_cut` when its newest report is a logged line (not a bar drawn in place) whose next "
            "report, one stride on, would still be inside the loop (step + stride < total), with no "
            "phase, epoch end or finish line after it anywhere: the loop stopped before its end. "
            "`tail_words` the words (three letters or more) of the rank's last progress or phase line that "
            "none of its earlier reports and no other rank's report carry; `odd_tail` when, of three ranks "
            "or more, it is the only one with such a last line and stopped at the same point as the others: "
            "it went where its peers did not. `mesh_peer_elsewhere` (a rank behind, when the logs state a "
            "device mesh): the odd-tail rank that shares one of its mesh groups whose other members are all "
            "behind too, while each of its other groups holds a rank that reported the step: the group "
            "collective it waits in is the one that rank left for its own code.",
        ),
        FactSpec(
            "last_line",
            ("rank", "host", "text", "before", "channel", "ranks_compared", "position", "passed_by",
             "peer_line", "all_same", "no_error", "time", *_EVIDENCE),
            "Each rank's last line of any kind (failure-signatures.md section 16 item 1; `last_line` events:"
            " the last lines each writer left at the end of its file or tagged stream, not a traceback, "
            "failure line or stack dump), compared in the channel where most ranks left lines (a `--log-dir`"
            " tree's `stdout.log` files, a console: `channel`, `ranks_compared`): `text` and `before` its "
            "last two lines; `position` behind (its peers printed that line and then more, against a strict "
            "majority that stopped on one line, or, of two ranks, a peer whose later lines this rank had "
            "printed before), elsewhere (a strict majority stopped on one line, and no rank printed this one"
            " at any iteration), same (the majority's line) or differs; `passed_by` the peers that printed "
            "its last line and went on; `peer_line` the line most ranks stopped on; `all_same` when every "
            "rank compared stopped on one line; `no_error` when the job's logs hold no failure line but a "
            "stop from outside and its consequences (as silent_hang's) (hanglens/analysis/tails.py).",
        ),
        FactSpec(
            "slow_phase",
            (
                "rank",
                "host",
                "label",
                "step",
                "total",
                "elapsed_s",
                "remaining_s",
                "projected_s",
                "running",
                "timeout_s",
                "timeout_basis",
                "outlasts_timeout",
                "waiting_ranks",
                "wait",
                "owner_basis",
                "idle_owner",
                "glued",
                "fault_seen",
                "text",
                "pattern",
                *_EVIDENCE,
            ),
            "One row per progress bar (`pattern` tqdm or the like; `took` for a phase that printed its "
            "duration once over, `elapsed time to <what> (seconds): <s>`, outlasting the timeout when it "
            "took at least the printed timeout and was printed after a peer's wait report in the same file) "
            "with times (the last report of each tqdm series), compared with the "
            "timeout its peers waited for (failure-signatures.md section 15): `running` (unfinished), "
            "`elapsed_s`, `remaining_s`, `projected_s` (elapsed + remaining), `timeout_s` and "
            "`timeout_basis` (printed by the waiting processes, or the section 0.3 default assumed), "
            "`outlasts_timeout` (still running, elapsed close to or past the timeout, projected length "
            "not below it), `waiting_ranks` (the other ranks seen waiting; listed when the bar outlasts "
            "the timeout, else empty) and `wait` (`timeout`, or only a `traceback`), `rank` with "
            "`owner_basis` (the bar's own rank, or the only rank of a known world not seen waiting, else "
            "None), `idle_owner` (that rank when it was not itself seen timing out in a collective, else "
            "None), `glued` (another writer's line glued to the bar: printed at that moment) and "
            "`fault_seen` (another process had a fault of its own).",
        ),
        FactSpec(
            "first_failure",
            ("order", "rank", "host", "time", "kind", "text", *_EVIDENCE),
            "Failure events on one normalised timeline, earliest first (order 1 = first).",
        ),
        FactSpec(
            "hang",
            ("rank", "host", "detector", "pg", "seq", "op", "timeout_ms", "time", "started", "before_peers",
             *_EVIDENCE),
            "One row per rank and detector that reported a hang (watchdog, heartbeat monitor, gloo, store, "
            "DataLoader, blocking wait, monitored barrier); `started` when its wait began (time minus `ran "
            "for` / the timeout, or minus `stuck for`); `before_peers` on a heartbeat monitor's row when "
            "that rank timed out on nothing itself and its watchdog was stuck before every other rank's "
            "collective wait began (failure-signatures.md section 0.2 R3).",
        ),
        FactSpec(
            "victim_signals",
            ("rank", "host", "signal", "after_stop", "time", "text", *_EVIDENCE),
            "Errors that are consequences of another rank's failure: peer closed, remote error, SIGTERM "
            "from the agent, watchdog timeouts after a peer crashed; `after_stop` when the line came after "
            "the job was stopped from outside (failure-signatures.md section 17.4: the launcher forwards the "
            "stop signal to every worker, and the peers of the first one to exit see it close its "
            "connections).",
        ),
        FactSpec(
            "versions",
            ("host", "rank", "component", "version", "distinct", "minority"),
            "torch / NCCL / CUDA / driver versions per rank and host, normalised (`2.3`, `2.3.0` and "
            "`2.3.0+cu121` are one torch release); `distinct` counts the versions of that component that "
            "ranks or hosts run (0 on statements that name neither, e.g. a collect_env dump: context only); "
            "`minority` marks versions held by fewer hosts (or ranks) than the most common one."),
        FactSpec(
            "host_failures",
            ("host", "failing_ranks", "total_ranks", "fraction"),
            "Failures per host, to see when they concentrate on one machine.",
        ),
        FactSpec(
            "crash",
            ("rank", "host", "kind", "first", "same_site", "setup", "before_link_errors",
             "before_peer_errors", "time", "text", *_EVIDENCE),
            "Each rank's earliest fault of its own (not a consequence of a peer's failure); `first` marks "
            "the ranks whose fault came first (within a second of the earliest, or all when untimed); "
            "`same_site` marks them when two or more ranks failed first and all raised the same exception "
            "type at the same innermost frame (or with the same message); `setup` marks an exception "
            "torch.distributed raised while setting up a process group from the job's configuration "
            "(init_process_group, new_group, the init_method's rendezvous handler), not a wait that timed "
            "out; `before_link_errors` marks a fault earlier than every error a transport reported toward a "
            "peer (IB completion, socket reset; by the clock, else by line order in one file); "
            "`before_peer_errors` marks a fault earlier than every error another rank printed about a "
            "collective or a peer (timeouts from when their wait began, lost peers, size checks, exceptions "
            "that pass a peer's failure on) and earlier than one at least (by the clock, else by line order "
            "in one file; errors that cannot be ordered are left out).",
        ),
        FactSpec(
            "unowned_crash",
            ("rank", "host", "exc_type", "before_hangs", "time", "text", *_EVIDENCE),
            "Python exceptions of a process's own (not a peer's failure) that no line attributes to a rank "
            "(tracebacks before torch 2.4 carry no `[rankN]:`); `before_hangs` when earlier than the first "
            "hang report or lost-peer error (gloo's `Connection closed by peer`; by the clock, else by line "
            "order in one file); `rank` only when the world size is "
            "stated and every other rank of it reported a hang or a failure of its own.",
        ),
        FactSpec(
            "fr_dumps",
            ("rank", "host", "has_dump", "dumps", "entries", "version", "format", *_EVIDENCE),
            "Flight Recorder dumps per rank of the job (world size from the logs or the dumps' pg_config): "
            "ranks with `has_dump` false wrote none (crashed, killed, or not collected).",
        ),
        FactSpec(
            "fr_match",
            ("pg", "pg_desc", "kind", "seq", "rank", "host", "mismatch", "culprit", "minority", "absent",
             "blocked_in", "has_dump", "op", "profiling_name", "input_sizes", "dtypes", "expected", "peer",
             "state", "retired", "call_site", "time_created_ns", *_EVIDENCE),
            "Flight Recorder entries matched across ranks (hanglens/analysis/flight.py): per process group "
            "the first collective (`kind` collective, `seq` = collective_seq_id) or point-to-point op "
            "(`kind` p2p, `seq` = p2p_seq_id) that does not match, one row per member rank. `mismatch` is "
            "op / size / dtype (a minority disagrees), missing (a rank never recorded it; `absent`), "
            "unmatched_send / unmatched_recv (no peer op), no_dump (a member without a dump; every dump "
            "agrees) or unfinished (all agree, still running). `blocked_in` names the op an absent rank is "
            "stuck in; `culprit` marks who broke the match; `call_site` is the user's frame.",
        ),
        FactSpec(
            "rank_status",
            (
                "rank",
                "host",
                "status",
                "crashed",
                "hung",
                "victim",
                "quiet",
                "own_log",
                "unheard",
                "first_error_kind",
                "first_error_time",
                "exitcode",
                "signal",
                "exited_clean",
                "signalled_outside",
                "alive_at_stop",
                "stopped_by_agent",
            ),
            "One row per known rank: did it crash, hang, only suffer, or look fine. `quiet` ranks reported "
            "no hang, no fault and no lost peer of their own (being stopped by the agent's SIGTERM or seeing "
            "the store vanish at teardown does not count): they were busy elsewhere or stuck silently. "
            "`own_log` marks ranks whose own output is in the input (a file of their own, or lines "
            "attributed to them): only then is a quiet rank's silence evidence; a rank never seen may just "
            "be cut out. `unheard`: a rank with no line at all whose absence still names it, because the "
            "world size is stated and every other rank of it reported its own wait (failure-signatures.md "
            "section 0.2 R2); the unheard ranks are fewer than those. `exited_clean`: its agent's whole "
            "ChildFailedError table lists its other local workers but not this one, so it had already "
            "exited 0 (and no fault or hang of its own is seen). "
            "`signalled_outside`: the agent found it dead of SIGTERM, SIGINT or SIGHUP while its own "
            "closing signals went to other pids (and the agent itself was not told to stop): someone else "
            "stopped it. `alive_at_stop`: when torchrun's agent was told to stop (`Received <sig> death "
            "signal`) it still had this rank's process to close (`Sending process <pid> closing signal`, "
            "a pid the rank's own line or the failure table pairs with it): it had not exited. "
            "`stopped_by_agent`: its node console's agent sent closing signals to as many workers as the "
            "console holds ranks of its own lines (after its last worker-group restart), so every worker "
            "there was still running when its agent stopped them; a dead worker would not have been "
            "signalled (no fault or hang of its own is seen).",
        ),
    )
}
