// AMX tile blocks (codegen/llvm/amx_tile.h) on hand-built loop nests: which
// statements before a tile block count as zeroing its accumulators (C then
// starts as tilezero and the statement is not emitted), and which do not.
// The code is compiled for Sapphire Rapids and read; it runs only where the
// host has AMX (tests/python/test_amx.py checks results there).
#include <gtest/gtest.h>

#include <regex>

#include "codegen/build.h"
#include "codegen/llvm/amx_tile.h"
#include "lower/stmt.h"

namespace autosched {
namespace {

constexpr int kRows = 16, kGroups = 16, kLanes = 16;
const DataType i32 = DataType::Int(32);

Stmt Loop(const Expr& v, int extent, Stmt body) {
  return ForNode::make(v, 0, extent, ForKind::Serial, std::move(body));
}

// C[16 rows x 16 lanes] += A[16 rows x 64 bytes] . W[16 groups x 16 lanes x 4]
// as the dot-product block the lowering makes: the element loop t outside the
// group loop k outside the rows r.
struct TileNest {
  Buffer a = MakeBuffer("A", DataType::UInt(8), {kRows * kGroups * 4});
  Buffer w = MakeBuffer("W", DataType::Int(8), {kGroups * kLanes * 4});
  Buffer c = MakeBuffer("C", i32, {kRows * kLanes});
  Stmt block;

  TileNest() {
    Expr t = VarNode::make("t"), k = VarNode::make("k"), r = VarNode::make("r");
    Expr row = RampNode::make(r * kLanes, 1, kLanes);
    Expr product =
        BroadcastNode::make(cast(i32, BufferLoadNode::make(a, {r * (kGroups * 4) + k * 4 + t})), kLanes) *
        cast(i32.with_lanes(kLanes),
             BufferLoadNode::make(w, {RampNode::make(k * (kLanes * 4) + t, 4, kLanes)}));
    Stmt store = BufferStoreNode::make(c, product + BufferLoadNode::make(c, {row}), {row});
    block = Loop(t, 4, Loop(k, kGroups, Loop(r, kRows, store)));
  }

  // A loop over `rows` rows storing `value` to `buffer` 16 lanes at a time.
  Stmt Fill(const Buffer& buffer, int rows, Expr value) const {
    Expr r = VarNode::make("r_init");
    return Loop(r, rows,
                BufferStoreNode::make(buffer, BroadcastNode::make(std::move(value), kLanes),
                                      {RampNode::make(r * kLanes, 1, kLanes)}));
  }

  std::string Asm(const Stmt& init) const {
    Module m = Build({"tile", {a, w, c}, SeqNode::make({init, block})},
                     Target::Parse("llvm -mcpu=sapphirerapids -no-host-check"));
    return m.GetSource("asm");
  }
};

int Count(const std::string& text, const std::string& word) {
  const std::regex re("\\b" + word + "\\b");
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

class AmxTileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  }
  const Target spr = Target::Parse("llvm -mcpu=sapphirerapids -no-host-check");
};

TEST_F(AmxTileTest, ZeroingEveryRowOfCMakesZeroTiles) {
  TileNest nest;
  const auto tile = MatchTileLoop(nest.block.as<ForNode>(), spr);
  ASSERT_TRUE(tile.has_value());
  EXPECT_TRUE(ZeroesTilesOfC(nest.Fill(nest.c, kRows, Expr(0)), *tile));
  const std::string asm_text = nest.Asm(nest.Fill(nest.c, kRows, Expr(0)));
  EXPECT_EQ(Count(asm_text, "tilezero"), 1);
  EXPECT_EQ(Count(asm_text, "tileloadd"), 2);  // A and B; C is not loaded
  EXPECT_EQ(Count(asm_text, "tdpbusd"), 1);
}

TEST_F(AmxTileTest, AnythingButExactlyZeroingCLoadsC) {
  TileNest nest;
  const auto tile = MatchTileLoop(nest.block.as<ForNode>(), spr);
  ASSERT_TRUE(tile.has_value());
  Buffer other = MakeBuffer("D", i32, {kRows * kLanes});
  const std::vector<std::pair<const char*, Stmt>> inits = {
      {"a row short", nest.Fill(nest.c, kRows - 1, Expr(0))},
      {"a row beyond", nest.Fill(nest.c, kRows + 1, Expr(0))},
      {"not zero", nest.Fill(nest.c, kRows, Expr(1))},
      {"another buffer", nest.Fill(other, kRows, Expr(0))},
      {"zero then more",
       SeqNode::make({nest.Fill(nest.c, kRows, Expr(0)), BufferStoreNode::make(nest.c, Expr(5), {Expr(3)})})},
  };
  for (const auto& [what, init] : inits) {
    EXPECT_FALSE(ZeroesTilesOfC(init, *tile)) << what;
  }
  const std::string asm_text = nest.Asm(nest.Fill(nest.c, kRows - 1, Expr(0)));
  EXPECT_EQ(Count(asm_text, "tilezero"), 0);
  EXPECT_EQ(Count(asm_text, "tileloadd"), 3);  // C too
}

}  // namespace
}  // namespace autosched
