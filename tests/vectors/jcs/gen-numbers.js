// Generates tests/vectors/jcs/numbers.txt with node's Number.prototype.toString
// (ECMA-262) as the reference: "<IEEE-754 bits, hex> <expected JCS text>".
// Usage: node tests/vectors/jcs/gen-numbers.js > tests/vectors/jcs/numbers.txt (deterministic seed).
const buf = new DataView(new ArrayBuffer(8));
let seed = 0x2545F4914F6CDD1Dn;
function rnd64() { // xorshift64*
  seed ^= seed >> 12n; seed ^= (seed << 25n) & 0xFFFFFFFFFFFFFFFFn; seed ^= seed >> 27n;
  return (seed * 0x2545F4914F6CDD1Dn) & 0xFFFFFFFFFFFFFFFFn;
}
const out = new Map();
function add(d) {
  if (!Number.isFinite(d)) return;
  buf.setFloat64(0, d);
  const hex = buf.getBigUint64(0).toString(16).padStart(16, '0');
  if (!out.has(hex)) out.set(hex, Object.is(d, -0) ? "0" : String(d));
}
function fromBits(b) { buf.setBigUint64(0, b); return buf.getFloat64(0); }
for (let e = -1074; e <= 1023; e++) { add(Math.pow(2, e)); add(-Math.pow(2, e)); }
for (let e = -1022; e <= 1023; e += 1) {
  const p = Math.pow(2, e);
  add(fromBits(BigInt.asUintN(64, (BigInt(e + 1023) << 52n) - 1n))); // just below 2^e
  add(fromBits((BigInt(e + 1023) << 52n) + 1n)); // just above
  void p;
}
for (let i = -330; i <= 310; i++) { add(Number("1e" + i)); add(Number("9.999999999999999e" + i)); add(Number("5e" + i)); }
const special = [0, -0, 1, -1, 0.1, 0.2, 0.3, 0.1 + 0.2, 1e21, 1e-7, 1e-6, 1e20, 999999999999999900000,
  123456789012345680000, 5e-324, 1.7976931348623157e308, 2.2250738585072014e-308,
  2.225073858507201e-308, 333333333.33333329, 2e-3, 4.5, 1e30, 9007199254740993, 9007199254740992,
  9007199254740994, 4294967296, -4294967296, 1.5e-7, 1.5e-6, 123e-20, 1e23, 1e22,
  295147905179352830000, 1.0000000000000002, 0.000001, 0.0000001, 0.00000123, 1e+21 - 65536];
special.forEach(add);
for (let i = 0; i < 3000; i++) { // uniform bit patterns
  add(fromBits(rnd64()));
}
for (let i = 0; i < 2000; i++) { // short decimals at every scale
  const r = rnd64();
  const digits = Number(r % 1000000n) / 1000;
  const e = Number((r >> 20n) % 700n) - 350;
  add(Number(digits + "e" + e));
  add(Number(r % 100000000000000000n) / 1e8);
}
for (let i = 0; i < 500; i++) { // subnormals
  add(fromBits(rnd64() & 0x000FFFFFFFFFFFFFn));
}
for (let i = 0; i < 500; i++) { // integers around 2^53 and 1e21
  const r = rnd64();
  add(2 ** 53 + Number(r % 100000n) * (r & 1n ? 1 : -1));
  add(1e21 + Number(r % 1000000n) * 65536 * (r & 2n ? 1 : -1));
}
for (let i = 0; i < 4000; i++) { // full 53-bit mantissas at everyday magnitudes (1e-8 .. 1e40)
  const r = rnd64();
  const e = Number((r >> 52n) % 160n) - 27; // binary exponent
  add(fromBits((BigInt(e + 1023) << 52n) | (r & 0x000FFFFFFFFFFFFFn)));
}
for (let i = 0; i < 1000; i++) { // values a computation would give
  const r = Number(rnd64() % 1000000n) + 1;
  add(r / 7); add(r / 3 * 1e-5); add(Math.sqrt(r)); add(r * 1.1); add(1 / r);
}
const lines = [...out].map(([h, s]) => h + " " + s);
console.log("# IEEE-754 double bits (hex) and its ECMAScript Number::toString (JCS) form.");
console.log("# Generated with node " + process.version + " by gen-numbers.js.");
console.log(lines.join("\n"));
