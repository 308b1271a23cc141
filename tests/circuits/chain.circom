pragma circom 2.0.0;
include "bitify.circom";

// x[0] = a*b, x[i] = x[i-1]^2 + b; plus a 64-bit decomposition of a private word (bit-valued
// witnesses, as in Filecoin's circuits). N sets the size: N + 65 constraints.
template Chain(N) {
    signal input a;
    signal input b;
    signal input word;
    signal output out;
    signal output low;
    signal x[N];
    x[0] <== a * b;
    for (var i = 1; i < N; i++) { x[i] <== x[i-1] * x[i-1] + b; }
    out <== x[N-1];
    component bits = Num2Bits(64);
    bits.in <== word;
    low <== bits.out[0] * bits.out[1];
}
