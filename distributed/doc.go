// Package distributed trains models on several processes or machines:
// process groups with collectives on tensors (AllReduce, Broadcast, Reduce,
// AllGather, ReduceScatter, Gather, Scatter, Barrier, Send/Recv) and
// data-parallel training with DataParallel. Wrap a model with DataParallel,
// give each rank its share of the data with data.DistributedSampler, call
// SyncGradients between Backward and the optimizer's Step, and start the
// ranks with ember launch; the runnable examples ExampleDataParallel and
// ExampleNewZeroOptimizer train with 2 and 3 ranks inside one process
// (NewLocalGroups). docs/distributed.md in the repository is the guide:
// launching on one machine or several, Slurm, MPI and Kubernetes, faults.
//
// The backend is pure Go over TCP. A job is started like a torchrun job:
// every process gets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE (and
// LOCAL_RANK), plus the shared secret EMBER_DIST_TOKEN, and calls
//
//	pg, err := distributed.NewGroupFromEnv(ctx)
//
// ember launch (cmd/ember) sets that environment and supervises the ranks:
// on one machine
//
//	ember launch -nproc 4 ./train
//
// and on two, the same command on each with its own -node-rank, rank 0's
// machine as -master and the same EMBER_DIST_TOKEN (TestLaunchAcrossMachines
// runs examples/ddp so on two network namespaces):
//
//	ember launch -nnodes 2 -node-rank 0 -master 10.0.0.1:29500 -nproc 4 ./train   # on 10.0.0.1
//	ember launch -nnodes 2 -node-rank 1 -master 10.0.0.1:29500 -nproc 4 ./train   # on the other
//
// Rank 0 serves a one-shot rendezvous at MASTER_ADDR:MASTER_PORT where the
// ranks exchange their listen addresses; then every pair of ranks connects
// directly and authenticates with an HMAC-SHA256 challenge on the token.
// Listeners bind only to the configured addresses and close once the mesh
// is complete. A rank that fails authentication with rank 0 (another
// EMBER_DIST_TOKEN), or is still missing when rank 0's timeout is about to
// pass, fails the rendezvous for every rank at once: rank 0 tells each
// registered rank which rank failed and why, so every rank returns an error
// naming it within moments, not after its timeout. With Config.FailureFile
// (EMBER_DIST_FAILURE_FILE) set, a rank whose group fails writes a
// FailureReport naming the rank at fault, from which ember launch names the
// rank that failed first. docs/security.md states what a process without
// the token can and cannot do.
//
// Between machines an AllReduce of more than 256 KiB runs a ring
// (reduce-scatter then all-gather) whose chunks are pipelined, so that
// every link carries data in both directions at once: 4 ranks on 4 network
// namespaces joined by links shaped to 1 Gbit/s all-reduce 64 MB at a bus
// bandwidth of 0.99 of a plain TCP stream over the same links
// (BenchmarkAllReduceOverLinks, which builds that network; it needs
// root). Smaller ones go up and back down a binomial tree, ⌈log2 N⌉
// messages per rank each way where a direct exchange would send N-1 (2
// ranks exchange directly). Both give every rank the same bits.
// ReduceScatter and AllGather of more than 256 KiB in all (ZeroOptimizer's
// exchanges too) go round the same pipelined ring, N-1 steps instead of
// the all-reduce's 2(N-1), at 0.96–0.98 of the stream on those links
// against 0.85–0.90 for the direct exchange, in which every rank sends its
// N-1 pieces at once; round the ring, rank j's share of a ReduceScatter
// is combined in the order j+1, j+2, …, j (mod N). A
// Broadcast of more than 256 KiB passes along a chain of the ranks, each
// forwarding every chunk as it arrives (0.96–0.99 of the stream on the
// same links, where the root sending to each rank in turn would manage
// a third); smaller ones go down a binomial tree, and Reduce goes up one.
//
// Ranks on one machine run every collective (Send and Recv stay on TCP),
// and ZeroOptimizer's exchanges, of every size, through shared memory
// instead of loopback TCP: a small all-reduce between two
// processes takes 10–18 µs there against 99–165 µs over TCP
// (BenchmarkSmallAllReduceProcesses, 16 to 1,024 floats). At setup every rank
// creates a memfd segment that the others map through /proc/PID/fd and
// prove shared by reading back a random nonce, after checking that they
// share host name, boot id and network namespace; the memfd is closed once
// mapped, so nothing is left behind however the processes end. Each rank
// copies a ChunkBytes window of its tensor into its segment, reduces its
// 1/N of every rank's window in rank order straight from the peers'
// segments (float sums in one pass over the N contributions), and copies
// the N reduced pieces back (with non-temporal stores from 32 MiB), two
// windows in flight. Waits spin briefly, then sleep on a pipe the runtime
// polls, so that a waiting rank holds no thread from computation; the TCP
// connections stay the control channel, so timeouts, dead peers and
// mismatched collectives are reported as on TCP. A group uses shared
// memory only if every rank can; a subgroup whose members share a machine
// sets up its own when NewSubgroup creates it, whatever the world group
// has. Config.DisableSharedMemory (EMBER_DIST_SHM=0) turns it off, and
// other systems and big-endian machines use TCP.
//
// Ranks spread evenly over several machines (L ranks on each of M ≥ 2,
// L ≥ 2, as `ember launch -nnodes M -nproc L` starts them) all-reduce in
// two levels: each rank reduces its 1/L of the tensor from its machine's
// ranks through shared memory, all-reduces that piece over TCP with the
// ranks of its local index on the other machines (by the ring, the tree
// or the direct exchange, as its size picks), and gathers the other
// pieces from its machine's ranks, in windows of 4 MiB pieces so that
// the shared-memory phases of one window overlap the network phase of
// another. Each machine's link then carries what
// one rank of an M-rank ring would send, where a flat ring over all M·L
// ranks carries up to twice that, and local ranks never exchange over
// loopback TCP. Every rank gets the same bits. ReduceScatter and
// AllGather, and ZeroOptimizer's exchanges, go in the same two levels
// (each rank sums from its machine's ranks their contributions to the
// shares of its local index on every machine, and those ranks
// reduce-scatter the sums over TCP; the all-gather goes the other way
// round). The group sets this up with M+L subgroups of its own, whose ids
// come before those of NewSubgroup; every rank must allow shared memory.
// Broadcast, Reduce, Gather and Scatter stay flat over TCP (a broadcast's
// chain crosses each machine boundary once anyway).
//
// Tensors from TCPGroup.SharedZeros (a collective allocation, like NCCL's
// registered buffers) live in segments that every local rank maps, so an
// AllReduce of them stages nothing: each rank reduces its 1/N of every
// window straight from the peers' tensors into its own and writes the
// result straight into the peers' tensors, so each tensor is read once
// and written once, and the ranks meet only at the start and the end.
// DataParallel allocates its gradient buckets this way. Where the ranks
// cannot share memory SharedZeros returns an ordinary tensor.
//
// Local ranks thus move an AllReduce's data in one of three ways. Tensors
// of SharedZeros on every rank are read and written in place through the
// mapped segments. Ordinary tensors (any CPU tensor; a non-contiguous one
// is reduced in a contiguous copy) are read and written in place too, the
// same way, where the kernel lets the ranks reach each other's memory:
// between processes with Linux's cross-memory attach
// (process_vm_readv/process_vm_writev, the kernel copying straight between
// the processes' pages; a tensor of 4 MiB or more that a rank all-reduces
// again is first moved onto huge pages, which the kernel copies about
// twice as fast), between ranks of one process (NewLocalGroups) with plain
// loads and stores. Every rank checks at setup that it can
// read a random nonce on every peer's heap (ptrace policies such as Yama,
// seccomp profiles and containers may refuse it) and the group uses the
// in-place path only if every rank can and none sets
// Config.DisableCrossMemory (EMBER_DIST_CMA=0). Everything else (the
// other collectives, all-reduces where that check failed, and a mix of
// SharedZeros and ordinary tensors, which fails with an error naming the
// peer) is staged through the slots as above.
//
// All-reducing 64 MB of float32 across 4 ranks on a 2-core machine, the
// bus bandwidth against a plain TCP stream between two of the processes
// was 1.22–1.28 for SharedZeros tensors, 0.50–0.51 for ordinary tensors
// in place (the kernel's cross-memory copies run at about 0.6 of Go's
// memmove there) and 0.34–0.35 staged; as goroutine ranks 1.46–1.74 for
// ordinary tensors. On huge pages, ordinary tensors between processes went
// 1.46–1.80 times as fast as on small pages in one alternation.
// docs/performance.md in the repository has the latest readings with their
// commands, for example:
//
//	go test -c -o /tmp/dist.test ./distributed && cd distributed &&
//	/tmp/dist.test -test.run '^$' -test.bench 'AllReduceProcesses|AllReduceVsStream' -test.benchtime 10x -test.count 3
//
// Built with the tag mpi (cgo, Debian's libopenmpi-dev), NewMPIGroup gives
// the same ProcessGroup over MPI for jobs started by mpirun or Slurm's srun:
//
//	go build -tags mpi ./cmd/train && mpirun -np 4 ./train
//
// A data-parallel training loop:
//
//	model, err := distributed.DataParallel(net, pg, distributed.DDPOptions{})
//	sampler := data.NewDistributedSampler(train.Len(), data.DistributedSamplerOptions{
//		Replicas: pg.Size(), Rank: pg.Rank(), Shuffle: true, Seed: 1})
//	for epoch := range epochs {
//		for idx := range sampler.Batches(epoch, batchPerRank, true) {
//			b := data.Gather(train, idx)
//			opt.ZeroGrad()
//			loss := lossFn.Forward(model.Forward(autograd.New(b[0])), b[1])
//			loss.Backward()
//			model.SyncGradients() // finish averaging over the ranks
//			opt.Step()
//		}
//	}
//
// Backward's gradient hooks start each bucket's all-reduce as soon as its
// gradients are ready, so communication overlaps the rest of backward;
// SyncGradients waits for them.
//
// NewZeroOptimizer shards the optimizer over the ranks (ZeRO stage 1): the
// buckets are reduce-scattered instead of all-reduced, each rank updates
// and keeps optimizer state for its 1/N of the parameter elements, and an
// all-gather of the updated parameters ends the step. It sends the same
// bytes as the all-reduce and divides the optimizer's time and memory by
// N; Consolidate gathers its state for a checkpoint in the unsharded
// optimizer's layout.
//
// Failures never hang: each operation has a timeout (DefaultTimeout, 5
// minutes, settable), and a rank that loses a peer aborts the group and
// tells the other ranks which rank failed, so every rank returns a
// *PeerError naming it. A rank that times out on a peer which has already
// sent it a message of the collective (over the ring, rank r hears only
// from rank r-1, which may itself wait on a silent rank; over the tree,
// ranks announce themselves to their parent and children) first waits, up
// to one timeout and a quarter second after that message, for the peer's
// own abort, so that the silent rank is the one named; with equal
// timeouts on every rank a failure is reported within twice the timeout
// and a quarter second. Every message over TCP marks its last frame, so a
// rank whose tensor is longer or shorter than its peer's fails at once
// with a *PeerError saying so, rather than waiting out its timeout.
// NewLocalGroups runs a whole group inside one process for tests.
//
// TCPGroup.NewSubgroup makes groups of some of the ranks over the same
// connections, MPIGroup.NewSubgroup over a communicator of those ranks.
//
// To resume a job, save a train.Checkpoint on rank 0 (train.SaveCheckpoint
// writes atomically, so a job killed mid-write resumes from the last
// complete checkpoint) and load it on every rank before DataParallel
// broadcasts rank 0's parameters; a ZeroOptimizer's Consolidate gathers its
// sharded state first. This package's SaveCheckpoint and LoadCheckpoint
// are deprecated wrappers of the same.
//
// Built with the tag cuda, NewNCCLGroup (or NewNCCLGroupFromEnv, same
// environment) gives a ProcessGroup over NVIDIA's NCCL for tensors on the
// GPU cuda:LOCAL_RANK, one process per GPU:
//
//	go build -tags cuda ./cmd/train   # no cgo: libnccl.so.2 is opened at run time
//
// libnccl.so.2 (NCCL 2.23 or newer) is looked for in LD_LIBRARY_PATH, in
// the lib folder of NVIDIA's nccl pip wheel and by the system loader. The
// ranks meet over the TCP rendezvous above, authenticated with
// EMBER_DIST_TOKEN, where rank 0 hands out NCCL's unique id. Operations
// that exceed the timeout abort the NCCL communicator and return an
// *NCCLError naming the operation.
package distributed
