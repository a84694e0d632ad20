// A user's own kernel on nccl_core's device communicator: every rank reads
// the previous rank's slice of a symmetric window through NCCL's device API
// and writes it to a local tensor (a ring shift), between two LSA barriers.
//
// Built by run.py with torch.utils.cpp_extension.load against the NCCL
// headers of the NCCL that is loaded (the ncclDevComm layout is
// release-specific).
#include <nccl.h>
#include <nccl_device.h>
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include <cstring>

__global__ void ring_shift_kernel(ncclDevComm comm, ncclWindow_t win, size_t offset,
                                  float* out, size_t n) {
  ncclCoopCta cta;
  ncclLsaBarrierSession<ncclCoopCta> bar(cta, comm, ncclTeamTagLsa(), blockIdx.x);
  bar.sync(cta, cuda::memory_order_acq_rel);  // every rank's input is in place
  int prev = (comm.lsaRank + comm.lsaSize - 1) % comm.lsaSize;
  const float* src = static_cast<const float*>(ncclGetLsaPointer(win, offset, prev));
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = src[i];
  }
  bar.sync(cta, cuda::memory_order_acq_rel);  // nobody reuses an input still being read
}

// dev_comm_ptr: DevCommResource.ptr (host address of the ncclDevComm);
// window: RegisteredWindowHandle.handle; offset in bytes.
void ring_shift(int64_t dev_comm_ptr, int64_t window, int64_t offset, torch::Tensor out,
                int64_t blocks) {
  TORCH_CHECK(out.is_cuda() && out.is_contiguous() && out.scalar_type() == torch::kFloat32,
              "out must be a contiguous float32 CUDA tensor");
  ncclDevComm comm;
  std::memcpy(&comm, reinterpret_cast<const void*>(dev_comm_ptr), sizeof(comm));
  auto stream = c10::cuda::getCurrentCUDAStream(out.device().index());
  ring_shift_kernel<<<blocks, 256, 0, stream.stream()>>>(
      comm, reinterpret_cast<ncclWindow_t>(window), static_cast<size_t>(offset),
      out.data_ptr<float>(), static_cast<size_t>(out.numel()));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("ring_shift", &ring_shift, "Copies the previous rank's window slice into out.");
}
