#pragma once
// The geometry of one hexahedral element: its volume, the derivatives of its shape functions,
// its face normals, the derivatives of its volume by the node positions, its characteristic
// length and its velocity gradient; and the Flanagan-Belytschko hourglass forces (Flanagan
// and Belytschko, 1981). The arithmetic is grouped as LULESH 2.0 groups it, term by term, so
// that the results agree with the reference to the last bit; loops over the nodes add in the
// same order as the reference's written-out sums.
#include <algorithm>
#include <cmath>

#include "domain.hpp"

namespace lulesh {

// Node numbering of a hexahedron: 0-3 the bottom face (counter-clockwise), 4-7 the top face
// above them.
struct hex {
  real x[8], y[8], z[8];
};

inline void gather_hex(const domain& d, const index_t* nodes, hex& h) {
  for (int i = 0; i < 8; ++i) h.x[i] = d.x[nodes[i]];
  for (int i = 0; i < 8; ++i) h.y[i] = d.y[nodes[i]];
  for (int i = 0; i < 8; ++i) h.z[i] = d.z[nodes[i]];
}

// The triple product of the columns (x1, x2, x3), (y1, y2, y3), (z1, z2, z3), grouped as the
// reference groups it.
inline real triple(real x1, real y1, real z1, real x2, real y2, real z2, real x3, real y3,
                   real z3) {
  return x1 * (y2 * z3 - z2 * y3) + x2 * (z1 * y3 - y1 * z3) + x3 * (y1 * z2 - z1 * y2);
}

// The volume as the sum of three triple products of edge vectors.
inline real hex_volume(const real x[8], const real y[8], const real z[8]) {
  auto dx = [&](int a, int b) { return x[a] - x[b]; };
  auto dy = [&](int a, int b) { return y[a] - y[b]; };
  auto dz = [&](int a, int b) { return z[a] - z[b]; };
  const real v = triple(dx(3, 1) + dx(7, 2), dx(6, 3), dx(2, 0), dy(3, 1) + dy(7, 2), dy(6, 3),
                        dy(2, 0), dz(3, 1) + dz(7, 2), dz(6, 3), dz(2, 0)) +
                 triple(dx(4, 3) + dx(5, 7), dx(6, 4), dx(7, 0), dy(4, 3) + dy(5, 7), dy(6, 4),
                        dy(7, 0), dz(4, 3) + dz(5, 7), dz(6, 4), dz(7, 0)) +
                 triple(dx(1, 4) + dx(2, 5), dx(6, 1), dx(5, 0), dy(1, 4) + dy(2, 5), dy(6, 1),
                        dy(5, 0), dz(1, 4) + dz(2, 5), dz(6, 1), dz(5, 0));
  return v * (real(1.0) / real(12.0));
}

// b[c][i]: derivative of shape function i by coordinate c at the centre; returns the Jacobian
// determinant (8 times the volume of the trilinear map's centre).
inline real shape_derivatives(const real x[8], const real y[8], const real z[8], real b[3][8]) {
  auto jac = [](const real* c, real j[3]) {
    const real a = c[6] - c[0], bb = c[5] - c[3], cc = c[7] - c[1], dd = c[4] - c[2];
    j[0] = real(.125) * (a + bb - cc - dd);  // d/dxi
    j[1] = real(.125) * (a - bb + cc - dd);  // d/deta
    j[2] = real(.125) * (a + bb + cc + dd);  // d/dzeta
  };
  real fx[3], fy[3], fz[3];
  jac(x, fx);
  jac(y, fy);
  jac(z, fz);
  // Cofactors of the Jacobian.
  const real cxxi = (fy[1] * fz[2]) - (fz[1] * fy[2]);
  const real cxet = -(fy[0] * fz[2]) + (fz[0] * fy[2]);
  const real cxze = (fy[0] * fz[1]) - (fz[0] * fy[1]);
  const real cyxi = -(fx[1] * fz[2]) + (fz[1] * fx[2]);
  const real cyet = (fx[0] * fz[2]) - (fz[0] * fx[2]);
  const real cyze = -(fx[0] * fz[1]) + (fz[0] * fx[1]);
  const real czxi = (fx[1] * fy[2]) - (fy[1] * fx[2]);
  const real czet = -(fx[0] * fy[2]) + (fy[0] * fx[2]);
  const real czze = (fx[0] * fy[1]) - (fy[0] * fx[1]);
  auto fill = [](real* r, real xi, real et, real ze) {
    r[0] = -xi - et - ze;
    r[1] = xi - et - ze;
    r[2] = xi + et - ze;
    r[3] = -xi + et - ze;
    // The opposite corners by symmetry.
    r[4] = -r[2];
    r[5] = -r[3];
    r[6] = -r[0];
    r[7] = -r[1];
  };
  fill(b[0], cxxi, cxet, cxze);
  fill(b[1], cyxi, cyet, cyze);
  fill(b[2], czxi, czet, czze);
  return real(8.) * (fx[1] * cxet + fy[1] * cyet + fz[1] * czet);
}

// The area-weighted normals at the nodes: every face adds a quarter of its area vector to each
// of its four nodes. The faces in this order, so that every node adds in the reference's order.
inline void node_normals(real px[8], real py[8], real pz[8], const real x[8], const real y[8],
                         const real z[8]) {
  static constexpr int faces[6][4] = {{0, 1, 2, 3}, {0, 4, 5, 1}, {1, 5, 6, 2},
                                      {2, 6, 7, 3}, {3, 7, 4, 0}, {4, 7, 6, 5}};
  std::fill(px, px + 8, real(0));
  std::fill(py, py + 8, real(0));
  std::fill(pz, pz + 8, real(0));
  for (const auto& f : faces) {
    const int n0 = f[0], n1 = f[1], n2 = f[2], n3 = f[3];
    const real bx0 = real(0.5) * (x[n3] + x[n2] - x[n1] - x[n0]);
    const real by0 = real(0.5) * (y[n3] + y[n2] - y[n1] - y[n0]);
    const real bz0 = real(0.5) * (z[n3] + z[n2] - z[n1] - z[n0]);
    const real bx1 = real(0.5) * (x[n2] + x[n1] - x[n3] - x[n0]);
    const real by1 = real(0.5) * (y[n2] + y[n1] - y[n3] - y[n0]);
    const real bz1 = real(0.5) * (z[n2] + z[n1] - z[n3] - z[n0]);
    const real ax = real(0.25) * (by0 * bz1 - bz0 * by1);
    const real ay = real(0.25) * (bz0 * bx1 - bx0 * bz1);
    const real az = real(0.25) * (bx0 * by1 - by0 * bx1);
    for (int n : f) {
      px[n] += ax;
      py[n] += ay;
      pz[n] += az;
    }
  }
}

// d(volume)/d(node position) for each node, from the six nodes around it.
inline void volume_derivatives(real dvdx[8], real dvdy[8], real dvdz[8], const real x[8],
                               const real y[8], const real z[8]) {
  static constexpr int around[8][6] = {{1, 2, 3, 4, 5, 7}, {2, 3, 0, 5, 6, 4}, {3, 0, 1, 6, 7, 5},
                                       {0, 1, 2, 7, 4, 6}, {7, 6, 5, 0, 3, 1}, {4, 7, 6, 1, 0, 2},
                                       {5, 4, 7, 2, 1, 3}, {6, 5, 4, 3, 2, 0}};
  const real twelfth = real(1.0) / real(12.0);
  for (int n = 0; n < 8; ++n) {
    const int* a = around[n];
    const real x0 = x[a[0]], x1 = x[a[1]], x2 = x[a[2]], x3 = x[a[3]], x4 = x[a[4]], x5 = x[a[5]];
    const real y0 = y[a[0]], y1 = y[a[1]], y2 = y[a[2]], y3 = y[a[3]], y4 = y[a[4]], y5 = y[a[5]];
    const real z0 = z[a[0]], z1 = z[a[1]], z2 = z[a[2]], z3 = z[a[3]], z4 = z[a[4]], z5 = z[a[5]];
    dvdx[n] = ((y1 + y2) * (z0 + z1) - (y0 + y1) * (z1 + z2) + (y0 + y4) * (z3 + z4) -
               (y3 + y4) * (z0 + z4) - (y2 + y5) * (z3 + z5) + (y3 + y5) * (z2 + z5)) *
              twelfth;
    dvdy[n] = (-(x1 + x2) * (z0 + z1) + (x0 + x1) * (z1 + z2) - (x0 + x4) * (z3 + z4) +
               (x3 + x4) * (z0 + z4) + (x2 + x5) * (z3 + z5) - (x3 + x5) * (z2 + z5)) *
              twelfth;
    dvdz[n] = (-(y1 + y2) * (x0 + x1) + (y0 + y1) * (x1 + x2) - (y0 + y4) * (x3 + x4) +
               (y3 + y4) * (x0 + x4) + (y2 + y5) * (x3 + x5) - (y3 + y5) * (x2 + x5)) *
              twelfth;
  }
}

// The squared-area measure of a quadrilateral face (a, b, c, d in order).
inline real face_area(const real* x, const real* y, const real* z, int a, int b, int c, int d) {
  const real fx = (x[c] - x[a]) - (x[d] - x[b]), gx = (x[c] - x[a]) + (x[d] - x[b]);
  const real fy = (y[c] - y[a]) - (y[d] - y[b]), gy = (y[c] - y[a]) + (y[d] - y[b]);
  const real fz = (z[c] - z[a]) - (z[d] - z[b]), gz = (z[c] - z[a]) + (z[d] - z[b]);
  return (fx * fx + fy * fy + fz * fz) * (gx * gx + gy * gy + gz * gz) -
         (fx * gx + fy * gy + fz * gz) * (fx * gx + fy * gy + fz * gz);
}

// Volume over the largest face's size: the length the Courant condition uses.
inline real characteristic_length(const real x[8], const real y[8], const real z[8], real volume) {
  static constexpr int faces[6][4] = {{0, 1, 2, 3}, {4, 5, 6, 7}, {0, 1, 5, 4},
                                      {1, 2, 6, 5}, {2, 3, 7, 6}, {3, 0, 4, 7}};
  real largest = 0;
  for (const auto& f : faces)
    largest = std::max(face_area(x, y, z, f[0], f[1], f[2], f[3]), largest);
  return real(4.0) * volume / std::sqrt(largest);
}

// The principal strain rates d[0..2] (and the shear ones d[3..5]) from the node velocities.
inline void velocity_gradient(const real xv[8], const real yv[8], const real zv[8],
                              const real b[3][8], real det, real d[6]) {
  const real inv = real(1.0) / det;
  auto grad = [&](const real* pf, const real* v) {
    return inv * (pf[0] * (v[0] - v[6]) + pf[1] * (v[1] - v[7]) + pf[2] * (v[2] - v[4]) +
                  pf[3] * (v[3] - v[5]));
  };
  d[0] = grad(b[0], xv);
  d[1] = grad(b[1], yv);
  d[2] = grad(b[2], zv);
  const real dyddx = grad(b[0], yv), dxddy = grad(b[1], xv), dzddx = grad(b[0], zv);
  const real dxddz = grad(b[2], xv), dzddy = grad(b[1], zv), dyddz = grad(b[2], yv);
  d[5] = real(.5) * (dxddy + dyddx);
  d[4] = real(.5) * (dxddz + dzddx);
  d[3] = real(.5) * (dzddy + dyddz);
}

// The four hourglass base vectors.
inline constexpr real hourglass_gamma[4][8] = {{1, 1, -1, -1, -1, -1, 1, 1},
                                               {1, -1, -1, 1, -1, 1, 1, -1},
                                               {1, -1, 1, -1, 1, -1, 1, -1},
                                               {-1, 1, -1, 1, 1, -1, 1, -1}};

// The hourglass force of one velocity component at the 8 nodes: the velocities projected on
// the hourglass modes and back, times `coefficient`.
inline void hourglass_force(const real v[8], const real gam[8][4], real coefficient, real f[8]) {
  real h[4];
  for (int m = 0; m < 4; ++m) {
    real s = gam[0][m] * v[0];
    for (int n = 1; n < 8; ++n) s += gam[n][m] * v[n];
    h[m] = s;
  }
  for (int n = 0; n < 8; ++n)
    f[n] =
        coefficient * (gam[n][0] * h[0] + gam[n][1] * h[1] + gam[n][2] * h[2] + gam[n][3] * h[3]);
}

}  // namespace lulesh
