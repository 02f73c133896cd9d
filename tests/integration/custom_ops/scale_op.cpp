// A real ONNX Runtime custom-op library for the custom_ops_library tests: op `ebb.test.Scale`,
// Y = X * factor (float tensors of any shape; float attribute `factor`, required). Built as a
// shared library that exports RegisterCustomOps, as any third-party op library does, and loaded by
// ORT through the session option, never linked into the test.
//
// EbbTestScaleCalls() returns how many times Compute ran in this process: the test dlopen()s the
// same file (the same handle ORT holds) to prove the op ran, not just registered.
#define ORT_API_MANUAL_INIT
#include <onnxruntime_cxx_api.h>
#undef ORT_API_MANUAL_INIT

#include <atomic>
#include <cstdint>
#include <vector>

namespace {

std::atomic<uint64_t> g_calls{0};

struct ScaleKernel {
  explicit ScaleKernel(const OrtKernelInfo* info) {
    Ort::ConstKernelInfo ki(info);
    factor = ki.GetAttribute<float>("factor");
  }
  void Compute(OrtKernelContext* context) {
    Ort::KernelContext ctx(context);
    Ort::ConstValue x = ctx.GetInput(0);
    const auto info = x.GetTensorTypeAndShapeInfo();
    const std::vector<int64_t> shape = info.GetShape();
    const size_t n = info.GetElementCount();
    Ort::UnownedValue y = ctx.GetOutput(0, shape);
    const float* in = x.GetTensorData<float>();
    float* out = y.GetTensorMutableData<float>();
    for (size_t i = 0; i < n; ++i) out[i] = in[i] * factor;
    g_calls.fetch_add(1, std::memory_order_relaxed);
  }
  float factor = 1.f;
};

struct ScaleOp : Ort::CustomOpBase<ScaleOp, ScaleKernel> {
  void* CreateKernel(const OrtApi&, const OrtKernelInfo* info) const {
    return new ScaleKernel(info);
  }
  const char* GetName() const { return "Scale"; }
  size_t GetInputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetInputType(size_t) const {
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const {
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  }
};

}  // namespace

extern "C" {

__attribute__((visibility("default"))) uint64_t EbbTestScaleCalls() { return g_calls.load(); }

// ORT calls this from RegisterCustomOpsLibrary. The op and its domain live as long as the
// library: ORT keeps the library loaded while any session options or session made with it lives.
__attribute__((visibility("default"))) OrtStatus* ORT_API_CALL
RegisterCustomOps(OrtSessionOptions* options, const OrtApiBase* api_base) {
  Ort::InitApi(api_base->GetApi(ORT_API_VERSION));
  try {
    static ScaleOp op;
    // Created once, thread-safely (two loads may register at once).
    static Ort::CustomOpDomain domain = [] {
      Ort::CustomOpDomain d("ebb.test");
      d.Add(&op);
      return d;
    }();
    Ort::UnownedSessionOptions(options).Add(domain);
  } catch (const Ort::Exception& e) {
    return Ort::GetApi().CreateStatus(ORT_FAIL, e.what());
  }
  return nullptr;
}

}  // extern "C"
