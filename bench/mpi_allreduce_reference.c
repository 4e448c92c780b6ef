/* The reference the CPU stand-in is held to: OpenMPI's own MPI_Allreduce timed by the plainest
 * loop (barrier, then the mean of ITERS calls, averaged over ranks), busbw by nccl-tests'
 * all_reduce factor 2(n-1)/n. bench/mpi_perf_vs_reference.sh runs it beside cmax-mpi-perf on the
 * same ranks: if cmax-mpi-perf's figures were well below these, the benchmark, not MPI, would be
 * what it measures.
 *   mpirun -np N mpi_allreduce_reference MIN_BYTES MAX_BYTES ITERS
 * Prints "SIZE BUSBW_GBS" per size on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (argc != 4) {
    if (rank == 0) fprintf(stderr, "usage: mpi_allreduce_reference MIN_BYTES MAX_BYTES ITERS\n");
    MPI_Finalize();
    return 2;
  }
  const long min_bytes = atol(argv[1]), max_bytes = atol(argv[2]);
  const int iters = atoi(argv[3]);
  float* send = malloc((size_t)max_bytes);
  float* recv = malloc((size_t)max_bytes);
  if (send == NULL || recv == NULL || min_bytes < 4 || iters < 1) return 2;
  for (long i = 0; i < max_bytes / 4; ++i) send[i] = 1.0f;
  for (long size = min_bytes; size <= max_bytes; size *= 2) {
    const int count = (int)(size / 4);
    for (int i = 0; i < 5; ++i) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    const double mine = (MPI_Wtime() - start) / iters;
    double sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    const double seconds = sum / ranks;
    const double busbw = (double)size / 1e9 / seconds * 2.0 * (ranks - 1) / ranks;
    if (rank == 0) printf("%ld %.3f\n", size, busbw);
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
