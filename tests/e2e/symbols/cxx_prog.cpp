/* SPDX-License-Identifier: MIT */
// cxx_prog.cpp - C++ functions with a known CPU split (a member function 2/3, a function
// template 1/3), whose names must appear demangled as perf prints them.  Compiled by
// symbols_test.sh with the system's c++ (the project itself is C only).
// usage: cxx_prog [MILLIONS]
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace sampo_test {
struct Spinner {
    __attribute__((noinline)) unsigned long spin(unsigned long n);
};

unsigned long Spinner::spin(unsigned long n) {
    unsigned long x = 1;
    for (unsigned long i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1;
    return x;
}

template <typename T> __attribute__((noinline)) T twice(T n) {
    T x = 3;
    for (T i = 0; i < n; i++)
        x = x * 2862933555777941757ul + 7;
    return x;
}
} // namespace sampo_test

int main(int argc, char **argv) {
    unsigned long m = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100, s = 0;
    sampo_test::Spinner sp;
    std::vector<unsigned long> v; // libstdc++ is loaded: its demangler is used
    for (unsigned long i = 0; i < m; i++) {
        s += sp.spin(2000000 + (i & 1));
        s += sampo_test::twice<unsigned long>(1000000 + (i & 1));
        v.push_back(s);
    }
    std::printf("%lu %zu\n", s, v.size());
    return 0;
}
