// Generic C ABI shim around one Verilated model: every top-level port by index.
//
// Compiled once per model with
//   -DVTOP=<class> -DVHEADER="<class>.h" -DSHIM(x)=<prefix>_##x -DPORTS_INC="ports_<prefix>.inc"
// where the ports file (written by build.rs from the Verilated header's VL_IN*/VL_OUT*
// declarations) holds one `PORT_IN(name, bits)` / `PORT_OUT(name, bits)` line per port.
// Values cross the boundary as little-endian arrays of 32-bit words (bit 0 of word 0 = bit 0
// of the port). The Rust side (sim/src/vl.rs) calls set -> eval -> get -> tick per cycle.
#include <cstdint>
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
    bool gate = true;  // dump only while open (trace_gate): an FST window of a long run
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

struct Port {
    const char* name;
    int bits;
    int dir;  // 0 = input, 1 = output
    void (*set)(VTOP*, const uint32_t*);
    void (*get)(VTOP*, uint32_t*);
};

#define PORT_IN(n, b) \
    {#n, b, 0, [](VTOP* t, const uint32_t* w) { put(t->n, w, b); }, [](VTOP* t, uint32_t* w) { get(t->n, w, b); }},
#define PORT_OUT(n, b) {#n, b, 1, nullptr, [](VTOP* t, uint32_t* w) { get(t->n, w, b); }},
const Port PORTS[] = {
#include PORTS_INC
};
#undef PORT_IN
#undef PORT_OUT
constexpr int NPORTS = sizeof(PORTS) / sizeof(PORTS[0]);

void dump(Sim* s) {
#if VM_TRACE_FST
    if (s->fst && s->gate) s->fst->dump(s->time);
#endif
}

}  // namespace

extern "C" {

// Create the model (reset asserted if it has a `rst` port); trace_path (may be null) opens an
// FST waveform. Returns null on failure.
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
        if (!s->fst->isOpen()) {
            delete s;
            return nullptr;
        }
    }
#else
    if (trace_path) {
        delete s;
        return nullptr;
    }
#endif
    s->top->clk = 0;
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

int SHIM(nports)() { return NPORTS; }

// Name, width and direction of port i (0 <= i < nports).
const char* SHIM(port_name)(int i) { return (i >= 0 && i < NPORTS) ? PORTS[i].name : nullptr; }
int SHIM(port_bits)(int i) { return (i >= 0 && i < NPORTS) ? PORTS[i].bits : 0; }
int SHIM(port_dir)(int i) { return (i >= 0 && i < NPORTS) ? PORTS[i].dir : -1; }

// Drive input port i from (bits+31)/32 words. Outputs and bad indices are ignored.
void SHIM(set)(void* h, int i, const uint32_t* w) {
    auto* s = static_cast<Sim*>(h);
    if (i >= 0 && i < NPORTS && PORTS[i].set) PORTS[i].set(s->top.get(), w);
}

// Read port i into (bits+31)/32 words.
void SHIM(get)(void* h, int i, uint32_t* w) {
    auto* s = static_cast<Sim*>(h);
    if (i >= 0 && i < NPORTS) PORTS[i].get(s->top.get(), w);
}

// Waveform dumping on (1) or off (0) from the next tick; on by default. Without a trace
// file it does nothing.
void SHIM(trace_gate)(void* h, int on) { static_cast<Sim*>(h)->gate = on != 0; }

// Settle combinational logic after inputs changed.
void SHIM(eval)(void* h) { static_cast<Sim*>(h)->top->eval(); }

// One clock cycle: rising edge (registers update), then falling edge.
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
