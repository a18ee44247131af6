"""Float32 error of Winograd's F(4x4, 3x3) for several interpolation point sets, against the float64 direct sum.

Why the Winograd kernels (kernels/conv2d_winograd_kernels.cpp) use the points 0, 1, -1, 1/2, -2 and
infinity: for each set this builds the Toom-Cook matrices (A^T and G from the points, B^T solved so that
A^T [(G g) .* (B^T d)] is the correlation of d with g), runs one 256-channel 3x3 layer through them rounding every stage
to float32 (numpy), and prints the max-norm error (op_table.h's measure) for signed and for post-ReLU inputs, with
Kaiming-uniform weights. Needs Debian's python3-numpy and python3-sympy; takes a few minutes:

    /usr/bin/python3 tools/winograd_points.py
"""
from fractions import Fraction as Fr

import numpy as np
import sympy


def matrices(points, m=4, r=3):
    """A^T (m x n), G (n x r) and B^T (n x n) for the finite points `points` (n - 1 of them) and infinity."""
    n = m + r - 1
    pts = [Fr(p) for p in points]
    at = [[pts[j] ** i for j in range(n - 1)] + [Fr(1 if i == m - 1 else 0)] for i in range(m)]
    f = [np.prod([pts[j] - pts[l] for l in range(n - 1) if l != j]) for j in range(n - 1)]
    g = [[pts[j] ** k / f[j] for k in range(r)] for j in range(n - 1)] + [[Fr(0)] * (r - 1) + [Fr(1)]]
    bt = sympy.Matrix(n, n, lambda a, b: sympy.Symbol(f"b{a}_{b}"))
    rat = lambda x: sympy.Rational(x.numerator, x.denominator)
    eqs = [sum(rat(at[i][j]) * rat(g[j][k]) * bt[j, l] for j in range(n)) - (1 if l == i + k else 0)
           for i in range(m) for k in range(r) for l in range(n)]
    sol = sympy.solve(eqs, list(bt))
    to_np = lambda rows: np.array([[float(v) for v in row] for row in rows])
    return to_np(at), to_np(g), np.array([[float(sol[bt[a, b]]) for b in range(n)] for a in range(n)])


def direct(x, w):  # x [C, H, W] (padding included), w [K, C, 3, 3]: the valid correlation in float64
    c, h, wd = x.shape
    y = np.zeros((w.shape[0], h - 2, wd - 2))
    for a in range(3):
        for b in range(3):
            y += np.einsum("kc,chw->khw", w[:, :, a, b], x[:, a:a + h - 2, b:b + wd - 2])
    return y


def winograd(x, w, at, g, bt, m=4, dt=np.float32):
    c, h, wd = x.shape
    k, n = w.shape[0], m + 2
    x, w, at, g, bt = (v.astype(dt) for v in (x, w, at, g, bt))
    u = np.einsum("ja,kcab,lb->kcjl", g, w, g).astype(dt)
    y = np.zeros((k, h - 2, wd - 2), dt)
    for ti in range((h - 2) // m):
        for tj in range((wd - 2) // m):
            v = np.einsum("ja,cab,lb->cjl", bt, x[:, ti * m:ti * m + n, tj * m:tj * m + n], bt).astype(dt)
            acc = np.zeros((k, n, n), dt)
            for ci in range(c):  # the product's sum over channels, rounded as it goes
                acc = (acc + u[:, ci] * v[ci]).astype(dt)
            y[:, ti * m:ti * m + m, tj * m:tj * m + m] = np.einsum("ia,kab,jb->kij", at, acc, at).astype(dt)
    return y


def main():
    rng = np.random.default_rng(1)
    channels, size = 256, 18
    bound = np.sqrt(6 / (channels * 9))
    cases = []
    for name, lo in (("signed", -1), ("post-ReLU", 0)):
        x = rng.uniform(lo, 1, (channels, size, size))
        w = rng.uniform(-bound, bound, (channels, channels, 3, 3))
        cases.append((name, x, w, direct(x, w)))
    h = Fr(1, 2)
    for label, pts in (("0, +-1, +-2 (Lavin and Gray)", [0, 1, -1, 2, -2]), ("0, +-1, 1/2, -2", [0, 1, -1, h, -2]),
                       ("0, +-1, -1/2, 2", [0, 1, -1, -h, 2]), ("0, +-1, +-1/2", [0, 1, -1, h, -h]),
                       ("0, +-1, 1/2, -3/2", [0, 1, -1, h, Fr(-3, 2)]), ("0, +-1, 2, -3/2", [0, 1, -1, 2, Fr(-3, 2)])):
        at, g, bt = matrices(pts)
        errs = [np.abs(winograd(x, w, at, g, bt) - ref).max() / max(1, np.abs(ref).max()) for _, x, w, ref in cases]
        print(f"{label:<30} " + "  ".join(f"{n} {e:.2e}" for (n, *_), e in zip(cases, errs)), flush=True)


if __name__ == "__main__":
    main()
