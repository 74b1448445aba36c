// common-ops' "C++ virtual method call": a loop of calls through a vtable.
// Two implementations, the object's pointer hidden behind an empty asm and
// the implementations kept out of line, so the compiler can neither resolve
// the call nor inline a guessed target; CMake also turns off GCC's
// speculative devirtualization for this file.
#include "lab.h"

struct lab_shape {
    virtual long step(long x) = 0;
    virtual ~lab_shape() = default;
};
struct lab_square : lab_shape {
    __attribute__((noinline)) long step(long x) override { return x + 1; }
};
struct lab_circle : lab_shape {
    __attribute__((noinline)) long step(long x) override { return x + 2; }
};

static volatile int lab_which = 0;

extern "C" double lab_virtual_call_loop(long n) {
    lab_square sq;
    lab_circle ci;
    lab_shape *s = lab_which ? static_cast<lab_shape *>(&ci) : &sq;
    __asm__ __volatile__("" : "+r"(s)); // hide the dynamic type
    long acc = 0;
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) acc = s->step(acc);
    double t = lab_now_ns() - t0;
    LAB_ESCAPE(acc);
    return t;
}
