// C ABI shim around one Verilated AXI4-Stream block with the port set
//   clk, rst, s_axis_{tdata,tkeep,tvalid,tready,tlast,tuser}, m_axis_{tdata,tkeep,tvalid,tready,tlast,tuser}.
// Compiled once per Verilated model with -DVTOP=<class> -DVHEADER="<class>.h" -DSHIM(x)=<prefix>_##x.
// The Rust side (sim/src/vl.rs) owns the handle and calls these in a fixed order per cycle:
// set_inputs -> eval -> get_outputs -> tick.
#include <cstdint>
#include <cstring>
#include <memory>
#include "verilated.h"
#if VM_TRACE_FST
#include "verilated_fst_c.h"
#endif
#include VHEADER

namespace {

struct Sim {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<VTOP> top;
#if VM_TRACE_FST
    std::unique_ptr<VerilatedFstC> fst;
#endif
    uint64_t time = 0;
};

template <typename T> void put(T& sig, const uint32_t* w, int bits) {
    uint64_t v = w[0];
    if (bits > 32) v |= uint64_t(w[1]) << 32;
    sig = static_cast<T>(v);
}
template <std::size_t N> void put(VlWide<N>& sig, const uint32_t* w, int) {
    for (std::size_t i = 0; i < N; ++i) sig[i] = w[i];
}
template <typename T> void get(const T& sig, uint32_t* w, int bits) {
    uint64_t v = sig;
    w[0] = uint32_t(v);
    if (bits > 32) w[1] = uint32_t(v >> 32);
}
template <std::size_t N> void get(const VlWide<N>& sig, uint32_t* w, int) {
    for (std::size_t i = 0; i < N; ++i) w[i] = sig[i];
}

void dump(Sim* s) {
#if VM_TRACE_FST
    if (s->fst) s->fst->dump(s->time);
#endif
}

}  // namespace

extern "C" {

// Create the model; trace_path (may be null) opens an FST waveform. Returns null on failure.
void* SHIM(new)(const char* trace_path) {
    auto* s = new Sim();
    s->ctx = std::make_unique<VerilatedContext>();
    s->ctx->debug(0);
    s->ctx->randReset(0);
    s->ctx->traceEverOn(trace_path != nullptr);
    s->top = std::make_unique<VTOP>(s->ctx.get(), "top");
#if VM_TRACE_FST
    if (trace_path) {
        s->fst = std::make_unique<VerilatedFstC>();
        s->top->trace(s->fst.get(), 99);
        s->fst->open(trace_path);
        if (!s->fst->isOpen()) { delete s; return nullptr; }
    }
#else
    if (trace_path) { delete s; return nullptr; }
#endif
    s->top->clk = 0;
    s->top->rst = 1;
    s->top->eval();
    return s;
}

void SHIM(free)(void* h) {
    auto* s = static_cast<Sim*>(h);
    if (!s) return;
    s->top->final();
#if VM_TRACE_FST
    if (s->fst) s->fst->close();
#endif
    delete s;
}

int SHIM(data_bits)() { return DATA_BITS; }

void SHIM(set_inputs)(void* h, uint8_t rst, const uint32_t* s_tdata, const uint32_t* s_tkeep,
                      uint8_t s_tvalid, uint8_t s_tlast, uint8_t s_tuser, uint8_t m_tready) {
    auto* s = static_cast<Sim*>(h);
    auto& t = *s->top;
    t.rst = rst;
    put(t.s_axis_tdata, s_tdata, DATA_BITS);
    put(t.s_axis_tkeep, s_tkeep, DATA_BITS / 8);
    t.s_axis_tvalid = s_tvalid;
    t.s_axis_tlast = s_tlast;
    t.s_axis_tuser = s_tuser;
    t.m_axis_tready = m_tready;
    t.eval();
}

void SHIM(get_outputs)(void* h, uint32_t* m_tdata, uint32_t* m_tkeep, uint8_t* flags, uint8_t* m_tuser) {
    auto* s = static_cast<Sim*>(h);
    auto& t = *s->top;
    get(t.m_axis_tdata, m_tdata, DATA_BITS);
    get(t.m_axis_tkeep, m_tkeep, DATA_BITS / 8);
    *flags = (t.s_axis_tready ? 1 : 0) | (t.m_axis_tvalid ? 2 : 0) | (t.m_axis_tlast ? 4 : 0);
    *m_tuser = t.m_axis_tuser;
}

// One full clock cycle: rising edge (registers update), then falling edge.
void SHIM(tick)(void* h) {
    auto* s = static_cast<Sim*>(h);
    auto& t = *s->top;
    dump(s);
    s->time += 5;
    t.clk = 1;
    t.eval();
    dump(s);
    s->time += 5;
    t.clk = 0;
    t.eval();
}

}  // extern "C"
