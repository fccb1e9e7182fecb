// OpenCL C generation from hand-built loop nests (no device needed): kernels
// and their launch sizes, guards, barriers, and the nests it refuses; the
// runtime's error names where the OpenCL runtime is built.
#include <gtest/gtest.h>

#include "codegen/opencl/codegen_opencl.h"
#include "support/error.h"
#ifdef AUTOSCHED_HAS_OPENCL
#include "runtime/opencl/opencl_device.h"
#include "test_util.h"
#endif

namespace autosched {
namespace {

const DataType f32 = DataType::Float(32);

int Count(const std::string& text, const std::string& word) {
  int n = 0;
  for (size_t p = text.find(word); p != std::string::npos; p = text.find(word, p + 1)) ++n;
  return n;
}

// What generating OpenCL C for f refuses ("" when it does not).
std::string ErrorOf(const LoweredFunc& f) {
  return test::ErrorOf([&] { GenerateOpenCL(f); });
}

// out[b * 4 + t] = in[...] * 2 over blockIdx.x (3) x threadIdx.x (4), then a
// second nest writing a temporary: two kernels, one temporary buffer.
TEST(OpenCLCodegen, KernelsLaunchSizesAndTemporaries) {
  Buffer in = MakeBuffer("in", f32, {12}), out = MakeBuffer("out", f32, {12});
  Buffer tmp = MakeBuffer("tmp", f32, {12});
  Expr b = VarNode::make("b"), t = VarNode::make("t"), i = VarNode::make("i");
  Expr flat = b * Expr(4) + t;
  Stmt first = ForNode::make(
      b, 0, 3, ForKind::BlockIdxX,
      ForNode::make(t, 0, 4, ForKind::ThreadIdxX,
                    BufferStoreNode::make(tmp, BufferLoadNode::make(in, {flat}) * Expr(2.0f), {flat})));
  Stmt second = ForNode::make(i, 0, 12, ForKind::Serial,
                              BufferStoreNode::make(out, BufferLoadNode::make(tmp, {i}), {i}));
  LoweredFunc f{"f", {in, out}, AllocateNode::make(tmp, SeqNode::make({first, second}))};
  OpenCLProgramSpec spec = GenerateOpenCL(f);
  ASSERT_EQ(spec.kernels.size(), 2u);
  ASSERT_EQ(spec.buffers.size(), 3u);
  EXPECT_EQ(spec.num_args, 2u);
  EXPECT_EQ(spec.kernels[0].num_groups[0], 3);
  EXPECT_EQ(spec.kernels[0].group_size[0], 4);
  EXPECT_EQ(spec.kernels[1].group_size[0], 1);  // no bindings: one work item
  EXPECT_EQ(spec.kernels[1].buffers, (std::vector<int>{1, 2}));
  EXPECT_NE(spec.source.find("get_group_id(0)"), std::string::npos) << spec.source;
  EXPECT_NE(spec.source.find("__global const float* restrict in"), std::string::npos) << spec.source;
}

// A __local tile written by the threads, then read: barriers around the
// writes; a store outside the thread binding is done by work item 0 only.
TEST(OpenCLCodegen, SharedBuffersGetBarriersAndUnboundStoresAGuard) {
  Buffer in = MakeBuffer("in", f32, {8}), out = MakeBuffer("out", f32, {9});
  Buffer tile = MakeBuffer("tile", f32, {8}, MemScope::Shared);
  Expr t = VarNode::make("t"), u = VarNode::make("u"), k = VarNode::make("k");
  Stmt fill = ForNode::make(t, 0, 8, ForKind::ThreadIdxX,
                            BufferStoreNode::make(tile, BufferLoadNode::make(in, {t}), {t}));
  Stmt use = ForNode::make(u, 0, 8, ForKind::ThreadIdxX,
                           BufferStoreNode::make(out, BufferLoadNode::make(tile, {Expr(7) - u}), {u}));
  Stmt last = BufferStoreNode::make(out, Expr(1.0f), {Expr(8)});
  Stmt body =
      ForNode::make(k, 0, 2, ForKind::Serial, AllocateNode::make(tile, SeqNode::make({fill, use, last})));
  LoweredFunc f{"f", {in, out}, body};
  const std::string source = GenerateOpenCL(f).source;
  EXPECT_NE(source.find("__local float tile[8] __attribute__((aligned(16)));"), std::string::npos) << source;
  EXPECT_EQ(Count(source, "barrier(CLK_LOCAL_MEM_FENCE);"), 2) << source;
  EXPECT_NE(source.find("if (get_local_id(0) == 0) out[8]"), std::string::npos) << source;
}

// One buffer allocated twice in a sequence (the copies of a partitioned loop
// once their extent-1 loops are removed): a private buffer is declared in a
// block of its own the second time, a shared one once for the kernel.
TEST(OpenCLCodegen, BuffersAllocatedTwiceInASequenceAreDeclaredOncePerScope) {
  Buffer in = MakeBuffer("in", f32, {8}), out = MakeBuffer("out", f32, {8});
  Buffer tile = MakeBuffer("tile", f32, {4}, MemScope::Local);
  Buffer group = MakeBuffer("group", f32, {8}, MemScope::Shared);
  Expr t = VarNode::make("t");
  auto part = [&](int half) {
    Expr i = t + Expr(4 * half);
    Stmt fetch = BufferStoreNode::make(group, BufferLoadNode::make(in, {i}), {i});
    Stmt copy = BufferStoreNode::make(tile, BufferLoadNode::make(group, {i}), {Expr(0)});
    Stmt store = BufferStoreNode::make(out, BufferLoadNode::make(tile, {Expr(0)}), {i});
    return AllocateNode::make(group,
                              SeqNode::make({fetch, AllocateNode::make(tile, SeqNode::make({copy, store}))}));
  };
  LoweredFunc f{
      "f", {in, out}, ForNode::make(t, 0, 4, ForKind::ThreadIdxX, SeqNode::make({part(0), part(1)}))};
  const std::string source = GenerateOpenCL(f).source;
  EXPECT_EQ(Count(source, "float tile[4];"), 2) << source;
  EXPECT_EQ(Count(source, "  {\n      float tile[4];"), 1) << source;  // the second in a block
  EXPECT_EQ(Count(source, "__local float group[8]"), 1) << source;
}

TEST(OpenCLCodegen, RefusesNestsThatCannotRunAsWritten) {
  Buffer out = MakeBuffer("out", f32, {16});
  Expr a = VarNode::make("a"), b = VarNode::make("b");
  Stmt store = BufferStoreNode::make(out, Expr(1.0f), {a * Expr(4) + b});
  LoweredFunc nested{
      "f",
      {out},
      ForNode::make(a, 0, 4, ForKind::ThreadIdxX, ForNode::make(b, 0, 4, ForKind::ThreadIdxX, store))};
  EXPECT_NE(ErrorOf(nested).find("bound to threadIdx.x inside loop 'a'"), std::string::npos)
      << ErrorOf(nested);

  Buffer tile = MakeBuffer("tile", f32, {4}, MemScope::Shared);
  Stmt in_thread = ForNode::make(
      a, 0, 4, ForKind::ThreadIdxX,
      AllocateNode::make(
          tile, SeqNode::make({BufferStoreNode::make(tile, Expr(1.0f), {Expr(0)}),
                               BufferStoreNode::make(out, BufferLoadNode::make(tile, {Expr(0)}), {a})})));
  // A shared buffer inside a thread loop is one buffer of the group (bound inference gives it the group's
  // region): stores not under a binding made inside it are done by work item 0.
  const std::string in_thread_source = GenerateOpenCL({"f", {out}, in_thread}).source;
  EXPECT_NE(in_thread_source.find("if (get_local_id(0) == 0) tile[0]"), std::string::npos)
      << in_thread_source;
  // A binding nested in the same binding is a cooperative fetch: only into shared buffers, no wider.
  Expr c = VarNode::make("c");
  Stmt fetch = ForNode::make(c, 0, 4, ForKind::ThreadIdxX, BufferStoreNode::make(tile, Expr(2.0f), {c}));
  Stmt wide = ForNode::make(c, 0, 8, ForKind::ThreadIdxX, BufferStoreNode::make(tile, Expr(2.0f), {c}));
  auto around = [&](const Stmt& inner) {
    return ForNode::make(
        a, 0, 4, ForKind::ThreadIdxX,
        AllocateNode::make(
            tile, SeqNode::make(
                      {inner, BufferStoreNode::make(out, BufferLoadNode::make(tile, {Expr(3) - a}), {a})})));
  };
  const std::string fetched = GenerateOpenCL({"f", {out}, around(fetch)}).source;
  EXPECT_EQ(Count(fetched, "barrier(CLK_LOCAL_MEM_FENCE);"), 2) << fetched;
  EXPECT_EQ(fetched.find("if (get_local_id(0) == 0) tile"), std::string::npos) << fetched;
  EXPECT_NE(ErrorOf({"f", {out}, around(wide)}).find("at most the outer loop's (4, here 8)"),
            std::string::npos)
      << ErrorOf({"f", {out}, around(wide)});

  Buffer priv = MakeBuffer("priv", f32, {4}, MemScope::Local);
  Stmt split_private = AllocateNode::make(
      priv, SeqNode::make(
                {ForNode::make(a, 0, 4, ForKind::ThreadIdxX, BufferStoreNode::make(priv, Expr(1.0f), {a})),
                 ForNode::make(b, 0, 4, ForKind::ThreadIdxX,
                               BufferStoreNode::make(out, BufferLoadNode::make(priv, {Expr(3) - b}), {b}))}));
  // At the top level it would be a device buffer between two kernels; inside a kernel it is private.
  Stmt in_kernel = ForNode::make(VarNode::make("k"), 0, 1, ForKind::Serial, split_private);
  EXPECT_NE(ErrorOf({"f", {out}, in_kernel}).find("private to each work item"), std::string::npos)
      << ErrorOf({"f", {out}, in_kernel});
  EXPECT_EQ(ErrorOf({"f", {out}, split_private}), "");
}

TEST(OpenCLCodegen, FloatVectorStoresUseVectorTypes) {
  Buffer in = MakeBuffer("in", f32, {8}), out = MakeBuffer("out", f32, {8});
  Expr ramp = RampNode::make(Expr(0), 1, 8);
  LoweredFunc f{"f",
                {in, out},
                BufferStoreNode::make(
                    out, BufferLoadNode::make(in, {ramp}) * BroadcastNode::make(Expr(3.0f), 8), {ramp})};
  const std::string source = GenerateOpenCL(f).source;
  EXPECT_NE(source.find("vstore8((vload8(0, in + 0) * ((float8)((0x1.8p+1f)))), 0, out + 0);"),
            std::string::npos)
      << source;
}

// round_even is OpenCL's rint (the default rounding mode: halves to even),
// round its round (halves away from zero).
TEST(OpenCLCodegen, RoundEvenIsRint) {
  Buffer in = MakeBuffer("in", f32, {4}), out = MakeBuffer("out", f32, {4});
  Expr i = VarNode::make("i");
  Expr x = BufferLoadNode::make(in, {i});
  Expr value = CallNode::make(Intrinsic::RoundEven, {x}) + CallNode::make(Intrinsic::Round, {x});
  LoweredFunc f{
      "f", {in, out}, ForNode::make(i, 0, 4, ForKind::Serial, BufferStoreNode::make(out, value, {i}))};
  const std::string source = GenerateOpenCL(f).source;
  EXPECT_NE(source.find("rint(in[i])"), std::string::npos) << source;
  EXPECT_NE(source.find("round(in[i])"), std::string::npos) << source;
}

TEST(OpenCLCodegen, VectorStoresWithoutAVectorFormArePrintedLaneByLane) {
  // A stride-2 read has no vload form: the store becomes a loop over its lanes.
  Buffer in = MakeBuffer("in", f32, {16}), out = MakeBuffer("out", f32, {8});
  LoweredFunc f{"f",
                {in, out},
                BufferStoreNode::make(out, BufferLoadNode::make(in, {RampNode::make(Expr(0), 2, 8)}),
                                      {RampNode::make(Expr(0), 1, 8)})};
  const std::string source = GenerateOpenCL(f).source;
  EXPECT_NE(source.find("for (int lane0 = 0; lane0 < 8; ++lane0)"), std::string::npos) << source;
  EXPECT_EQ(source.find("vstore8"), std::string::npos) << source;
}

#ifdef AUTOSCHED_HAS_OPENCL
TEST(OpenCLRuntime, ErrorCodesAreNamed) {
  EXPECT_STREQ(OpenCLErrorName(CL_INVALID_WORK_GROUP_SIZE), "CL_INVALID_WORK_GROUP_SIZE");
  EXPECT_STREQ(OpenCLErrorName(CL_BUILD_PROGRAM_FAILURE), "CL_BUILD_PROGRAM_FAILURE");
  EXPECT_STREQ(OpenCLErrorName(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
  EXPECT_STREQ(OpenCLErrorName(-12345), "unknown OpenCL error");
  const std::string message = test::ErrorOf([] { CheckCL(CL_OUT_OF_RESOURCES, "launching kernel 'k'"); });
  EXPECT_TRUE(test::Contains(message, "launching kernel 'k': OpenCL error CL_OUT_OF_RESOURCES (-5)"))
      << message;
  // Resource errors have their own type: a measurement worker is replaced after one.
  for (cl_int code : {CL_OUT_OF_RESOURCES, CL_OUT_OF_HOST_MEMORY, CL_MEM_OBJECT_ALLOCATION_FAILURE}) {
    EXPECT_TRUE(IsOpenCLResourceError(code));
    EXPECT_THROW(CheckCL(code, "x"), DeviceResourceError);
  }
  EXPECT_FALSE(IsOpenCLResourceError(CL_INVALID_WORK_GROUP_SIZE));
  try {
    CheckCL(CL_INVALID_WORK_GROUP_SIZE, "x");
  } catch (const DeviceResourceError&) {
    ADD_FAILURE() << "not a resource error";
  } catch (const Error&) {
  }
}

TEST(OpenCLRuntime, TheProgramCacheIsBoundedAndEvictedProgramsAreReleased) {
  if (ListOpenCLDevices().empty()) GTEST_SKIP() << "no OpenCL device";
  const OpenCLDevice& device = ListOpenCLDevices()[0];
  auto source = [](int i) {
    return "__kernel void k(__global float* a) { a[0] = " + std::to_string(i) + ".0f; }";
  };
  SetOpenCLProgramCacheCapacity(2);
  std::weak_ptr<std::remove_pointer_t<cl_program>> first = GetOpenCLProgram(device, source(0), "");
  EXPECT_FALSE(first.expired());                                                 // cached
  EXPECT_EQ(GetOpenCLProgram(device, source(0), "").get(), first.lock().get());  // built once
  for (int i = 1; i <= 4; ++i) GetOpenCLProgram(device, source(i), "");
  EXPECT_EQ(OpenCLProgramCacheSize(), 2u);
  EXPECT_TRUE(first.expired());  // evicted and held by nothing: released in the driver
  // Capacity 0 (a measurement worker): a program lives as long as its holders.
  SetOpenCLProgramCacheCapacity(0);
  EXPECT_EQ(OpenCLProgramCacheSize(), 0u);
  CLProgramRef held = GetOpenCLProgram(device, source(7), "");
  std::weak_ptr<std::remove_pointer_t<cl_program>> seen = held;
  EXPECT_EQ(OpenCLProgramCacheSize(), 0u);
  held.reset();
  EXPECT_TRUE(seen.expired());
  SetOpenCLProgramCacheCapacity(16);
}

TEST(OpenCLRuntime, CompileErrorsCarryTheBuildLog) {
  if (ListOpenCLDevices().empty()) GTEST_SKIP() << "no OpenCL device";
  const std::string message = test::ErrorOf([] {
    GetOpenCLProgram(ListOpenCLDevices()[0], "__kernel void k(__global float* a) { a[0] = undefined_name; }",
                     "");
  });
  EXPECT_TRUE(test::Contains(message, "CL_BUILD_PROGRAM_FAILURE")) << message;
  EXPECT_TRUE(test::Contains(message, "undefined_name")) << message;  // from the log
}
#endif

}  // namespace
}  // namespace autosched
