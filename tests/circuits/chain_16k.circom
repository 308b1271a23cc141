pragma circom 2.0.0;
include "chain.circom";
component main {public [a, b]} = Chain(16400);
