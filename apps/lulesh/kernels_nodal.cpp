// The kernels of the step's first half: forces at the element corners, their sums at the
// nodes, and the nodes' motion; and the element kinematics that follow from the new positions.
#include <cmath>

#include "element_math.hpp"
#include "kernels.hpp"

namespace lulesh {

namespace {

constexpr int volume_error = -1;

// The hourglass forces of element k into its corner slots (fx_hg, ...), from the volume
// derivatives, the element's current volume and its node velocities.
void hourglass_forces(domain& d, index_t k, const hex& h) {
  real dvdx[8], dvdy[8], dvdz[8];
  volume_derivatives(dvdx, dvdy, dvdz, h.x, h.y, h.z);
  const real determ = d.volo[k] * d.v[k];
  if (d.v[k] <= real(0.0)) throw physics_error("lulesh: negative volume (hourglass)", volume_error);
  const real volinv = real(1.0) / determ;
  real gam[8][4];
  for (int m = 0; m < 4; ++m) {
    const real* g = hourglass_gamma[m];
    auto mode = [g](const real* c) {
      real s = c[0] * g[0];
      for (int n = 1; n < 8; ++n) s += c[n] * g[n];
      return s;
    };
    const real mx = mode(h.x), my = mode(h.y), mz = mode(h.z);
    for (int n = 0; n < 8; ++n)
      gam[n][m] = g[n] - volinv * (dvdx[n] * mx + dvdy[n] * my + dvdz[n] * mz);
  }
  const real coefficient = -d.k.hgcoef * real(0.01) * d.ss[k] * d.elem_mass[k] / std::cbrt(determ);
  const index_t* nl = &d.nodelist[8 * static_cast<std::size_t>(k)];
  real vel[8];
  const std::size_t c = 8 * static_cast<std::size_t>(k);
  for (int n = 0; n < 8; ++n) vel[n] = d.xd[nl[n]];
  hourglass_force(vel, gam, coefficient, &d.fx_hg[c]);
  for (int n = 0; n < 8; ++n) vel[n] = d.yd[nl[n]];
  hourglass_force(vel, gam, coefficient, &d.fy_hg[c]);
  for (int n = 0; n < 8; ++n) vel[n] = d.zd[nl[n]];
  hourglass_force(vel, gam, coefficient, &d.fz_hg[c]);
}

}  // namespace

void element_forces(domain& d, index_t begin, index_t end) {
  for (index_t k = begin; k < end; ++k) {
    hex h;
    gather_hex(d, &d.nodelist[8 * static_cast<std::size_t>(k)], h);
    // The stress is isotropic: -(p + q) on every axis.
    const real sig = -d.p[k] - d.q[k];
    real b[3][8];
    const real determ = shape_derivatives(h.x, h.y, h.z, b);
    node_normals(b[0], b[1], b[2], h.x, h.y, h.z);
    const std::size_t c = 8 * static_cast<std::size_t>(k);
    for (int n = 0; n < 8; ++n) {
      d.fx_stress[c + n] = -(sig * b[0][n]);
      d.fy_stress[c + n] = -(sig * b[1][n]);
      d.fz_stress[c + n] = -(sig * b[2][n]);
    }
    if (determ <= real(0.0)) throw physics_error("lulesh: negative volume (stress)", volume_error);
    if (d.k.hgcoef > real(0.)) hourglass_forces(d, k, h);
  }
}

void gather_node_forces(domain& d, index_t begin, index_t end) {
  const index_t* corners = d.node_corners.data();
  for (index_t n = begin; n < end; ++n) {
    const index_t first = d.node_corner_start[n], last = d.node_corner_start[n + 1];
    real sx = 0, sy = 0, sz = 0;
    for (index_t i = first; i < last; ++i) {
      const index_t c = corners[i];
      sx += d.fx_stress[c];
      sy += d.fy_stress[c];
      sz += d.fz_stress[c];
    }
    real hx = 0, hy = 0, hz = 0;
    for (index_t i = first; i < last; ++i) {
      const index_t c = corners[i];
      hx += d.fx_hg[c];
      hy += d.fy_hg[c];
      hz += d.fz_hg[c];
    }
    // The stress sum first, then the hourglass sum added to it: the reference's two passes.
    d.fx[n] = sx;
    d.fy[n] = sy;
    d.fz[n] = sz;
    d.fx[n] += hx;
    d.fy[n] += hy;
    d.fz[n] += hz;
  }
}

void advance_nodes(domain& d, index_t begin, index_t end, real dt) {
  const real u_cut = d.k.u_cut;
  auto move = [dt, u_cut](real& pos, real& vel, real force, real mass, bool fixed) {
    real acc = force / mass;
    if (fixed) acc = real(0.0);
    real vnew = vel + acc * dt;
    if (std::fabs(vnew) < u_cut) vnew = real(0.0);
    vel = vnew;
    pos += vel * dt;
  };
  for (index_t n = begin; n < end; ++n) {
    const std::uint8_t symm = d.node_symm[n];
    const real m = d.nodal_mass[n];
    move(d.x[n], d.xd[n], d.fx[n], m, symm & symm_x);
    move(d.y[n], d.yd[n], d.fy[n], m, symm & symm_y);
    move(d.z[n], d.zd[n], d.fz[n], m, symm & symm_z);
  }
}

namespace {

// ((v[a] + v[b]) + v[c]) + v[d]
inline real sum4(const real* v, int a, int b, int c, int e) {
  return v[a] + v[b] + v[c] + v[e];
}
// Differences across the element along the three logical directions.
inline real across_xi(const real* v) {
  return real(0.25) * (sum4(v, 1, 2, 6, 5) - sum4(v, 0, 3, 7, 4));
}
inline real across_eta(const real* v) {
  return real(-0.25) * (sum4(v, 0, 1, 5, 4) - sum4(v, 3, 2, 6, 7));
}
inline real across_zeta(const real* v) {
  return real(0.25) * (sum4(v, 4, 5, 6, 7) - sum4(v, 0, 1, 2, 3));
}

// The position and velocity gradients along each logical direction that the monotonic q
// limits with (delx_*: the element's length along it, delv_*: the velocity change across it).
void q_gradients(domain& d, index_t k, const hex& h, const real xv[8], const real yv[8],
                 const real zv[8]) {
  const real ptiny = real(1.e-36);
  const real vol = d.volo[k] * d.vnew[k];
  const real norm = real(1.0) / (vol + ptiny);
  const real dxj = across_eta(h.x), dyj = across_eta(h.y), dzj = across_eta(h.z);
  const real dxi = across_xi(h.x), dyi = across_xi(h.y), dzi = across_xi(h.z);
  const real dxk = across_zeta(h.x), dyk = across_zeta(h.y), dzk = across_zeta(h.z);
  // The area vector a of the face pair, then length = vol / |a| and delv = (a / vol) . dv.
  auto along = [&](real ax, real ay, real az, real dxv, real dyv, real dzv, real& delx,
                   real& delv) {
    delx = vol / std::sqrt(ax * ax + ay * ay + az * az + ptiny);
    ax *= norm;
    ay *= norm;
    az *= norm;
    delv = ax * dxv + ay * dyv + az * dzv;
  };
  along(dyi * dzj - dzi * dyj, dzi * dxj - dxi * dzj, dxi * dyj - dyi * dxj, across_zeta(xv),
        across_zeta(yv), across_zeta(zv), d.delx_zeta[k], d.delv_zeta[k]);
  along(dyj * dzk - dzj * dyk, dzj * dxk - dxj * dzk, dxj * dyk - dyj * dxk, across_xi(xv),
        across_xi(yv), across_xi(zv), d.delx_xi[k], d.delv_xi[k]);
  along(dyk * dzi - dzk * dyi, dzk * dxi - dxk * dzi, dxk * dyi - dyk * dxi, across_eta(xv),
        across_eta(yv), across_eta(zv), d.delx_eta[k], d.delv_eta[k]);
}

}  // namespace

void element_kinematics(domain& d, index_t begin, index_t end, real dt) {
  for (index_t k = begin; k < end; ++k) {
    const index_t* nl = &d.nodelist[8 * static_cast<std::size_t>(k)];
    hex h;
    gather_hex(d, nl, h);
    const real volume = hex_volume(h.x, h.y, h.z);
    const real relative = volume / d.volo[k];
    d.vnew[k] = relative;
    d.delv[k] = relative - d.v[k];
    d.arealg[k] = characteristic_length(h.x, h.y, h.z, volume);
    real xv[8], yv[8], zv[8];
    for (int n = 0; n < 8; ++n) {
      xv[n] = d.xd[nl[n]];
      yv[n] = d.yd[nl[n]];
      zv[n] = d.zd[nl[n]];
    }
    // The strain rate at the half step: positions moved back by half a step.
    hex half = h;
    const real dt2 = real(0.5) * dt;
    for (int n = 0; n < 8; ++n) {
      half.x[n] -= dt2 * xv[n];
      half.y[n] -= dt2 * yv[n];
      half.z[n] -= dt2 * zv[n];
    }
    real b[3][8], strain[6];
    const real det = shape_derivatives(half.x, half.y, half.z, b);
    velocity_gradient(xv, yv, zv, b, det, strain);
    d.vdov[k] = strain[0] + strain[1] + strain[2];
    if (relative <= real(0.0))
      throw physics_error("lulesh: negative volume (kinematics)", volume_error);
    q_gradients(d, k, h, xv, yv, zv);
  }
}

}  // namespace lulesh
