// Extra C ABI function for a Verilated roce_axis_drop_fifo: read its frame counters.
// Compiled once per drop FIFO model with the same -DVTOP/-DVHEADER/-DSHIM as axis_shim.cpp.
// The handle is the one axis_shim.cpp's SHIM(new) returns: its struct Sim starts with
//   std::unique_ptr<VerilatedContext> ctx; std::unique_ptr<VTOP> top;
// SimHead below mirrors exactly those leading members (keep them in sync).
#include <cstdint>
#include <memory>
#include "verilated.h"
#include VHEADER

namespace {
struct SimHead {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<VTOP> top;
};
}  // namespace

extern "C" {

// c[0..4] = good_count, drop_bad_count, drop_overflow_count, drop_full_count.
void SHIM(drop_fifo_counters)(void* h, uint32_t* c) {
    auto* s = static_cast<SimHead*>(h);
    auto& t = *s->top;
    c[0] = t.good_count;
    c[1] = t.drop_bad_count;
    c[2] = t.drop_overflow_count;
    c[3] = t.drop_full_count;
}

}  // extern "C"
