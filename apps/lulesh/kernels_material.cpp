// The kernels of the step's second half: the monotonic artificial viscosity, the equation of
// state, the new volumes and the time-step bounds; and the time step itself.
#include <cmath>

#include "kernels.hpp"

namespace lulesh {

namespace {

constexpr int volume_error = -1, qstop_error = -2;

// The slope limiter of the monotonic q along one direction: the gradient's ratio to its two
// neighbours' (a symmetry face mirrors the element itself, a free face has none).
real limiter(const domain& d, const std::vector<real>& delv, index_t k, std::int32_t bc,
             std::int32_t m_mask, std::int32_t m_symm, std::int32_t m_free, index_t m_neighbour,
             std::int32_t p_mask, std::int32_t p_symm, std::int32_t p_free, index_t p_neighbour) {
  const real ptiny = real(1.e-36);
  const real norm = real(1.) / (delv[k] + ptiny);
  auto side = [&](std::int32_t flags, std::int32_t symm, std::int32_t free, index_t neighbour) {
    if (flags == symm) return delv[k];
    if (flags == free) return real(0.0);
    return delv[neighbour];  // interior, or a neighbour domain's ghost slot
  };
  real delvm = side(bc & m_mask, m_symm, m_free, m_neighbour) * norm;
  real delvp = side(bc & p_mask, p_symm, p_free, p_neighbour) * norm;
  real phi = real(.5) * (delvm + delvp);
  delvm *= d.k.monoq_limiter_mult;
  delvp *= d.k.monoq_limiter_mult;
  if (delvm < phi) phi = delvm;
  if (delvp < phi) phi = delvp;
  if (phi < real(0.)) phi = real(0.);
  if (phi > d.k.monoq_max_slope) phi = d.k.monoq_max_slope;
  return phi;
}

void monotonic_q(domain& d, index_t k) {
  const std::int32_t bc = d.elem_bc[k];
  const real phixi = limiter(d, d.delv_xi, k, bc, xi_m, xi_m_symm, xi_m_free, d.lxim[k], xi_p,
                             xi_p_symm, xi_p_free, d.lxip[k]);
  const real phieta = limiter(d, d.delv_eta, k, bc, eta_m, eta_m_symm, eta_m_free, d.letam[k],
                              eta_p, eta_p_symm, eta_p_free, d.letap[k]);
  const real phizeta = limiter(d, d.delv_zeta, k, bc, zeta_m, zeta_m_symm, zeta_m_free, d.lzetam[k],
                               zeta_p, zeta_p_symm, zeta_p_free, d.lzetap[k]);
  real qlin = 0, qquad = 0;
  // Only a compressing element has a q.
  if (!(d.vdov[k] > real(0.))) {
    real dxi = d.delv_xi[k] * d.delx_xi[k];
    real deta = d.delv_eta[k] * d.delx_eta[k];
    real dzeta = d.delv_zeta[k] * d.delx_zeta[k];
    if (dxi > real(0.)) dxi = real(0.);
    if (deta > real(0.)) deta = real(0.);
    if (dzeta > real(0.)) dzeta = real(0.);
    const real rho = d.elem_mass[k] / (d.volo[k] * d.vnew[k]);
    qlin = -d.k.qlc_monoq * rho *
           (dxi * (real(1.) - phixi) + deta * (real(1.) - phieta) + dzeta * (real(1.) - phizeta));
    qquad = d.k.qqc_monoq * rho *
            (dxi * dxi * (real(1.) - phixi * phixi) + deta * deta * (real(1.) - phieta * phieta) +
             dzeta * dzeta * (real(1.) - phizeta * phizeta));
  }
  d.qq[k] = qquad;
  d.ql[k] = qlin;
}

// The ideal-gas pressure: p = (2/3)(1 + compression) e, cut off near zero and at the floor.
struct pressure {
  real p, bvc, pbvc;
};
inline pressure eos_pressure(const constants& c, real e, real compression, real vnewc) {
  const real c1s = real(2.0) / real(3.0);
  pressure r{0, c1s * (compression + real(1.)), c1s};
  r.p = r.bvc * e;
  if (std::fabs(r.p) < c.p_cut) r.p = real(0.0);
  if (vnewc >= c.eosvmax) r.p = real(0.0);
  if (r.p < c.pmin) r.p = c.pmin;
  return r;
}

inline real sound_speed_sq_root(real s) {
  return s <= real(.1111111e-36) ? real(.3333333e-18) : std::sqrt(s);
}

struct eos_state {
  real p, e, q, bvc, pbvc;
};

// One evaluation of the EOS of element k: the energy integrated over the step with a
// predictor at the half step and a corrector, the pressure and q at the end.
eos_state evaluate_eos(const domain& d, index_t k, real vnewc) {
  const constants& c = d.k;
  const real rho0 = c.refdens;
  const real e_old = d.e[k], delvc = d.delv[k], q_old = d.q[k];
  const real qq_old = d.qq[k], ql_old = d.ql[k];
  real p_old = d.p[k];
  real compression = real(1.) / vnewc - real(1.);
  const real vchalf = vnewc - delvc * real(.5);
  real comp_half = real(1.) / vchalf - real(1.);
  if (c.eosvmin != real(0.) && vnewc <= c.eosvmin) comp_half = compression;
  if (c.eosvmax != real(0.) && vnewc >= c.eosvmax) {
    p_old = real(0.);
    compression = real(0.);
    comp_half = real(0.);
  }
  const real work = real(0.);
  real e_new = e_old - real(0.5) * delvc * (p_old + q_old) + real(0.5) * work;
  if (e_new < c.emin) e_new = c.emin;
  const pressure half = eos_pressure(c, e_new, comp_half, vnewc);
  const real vhalf = real(1.) / (real(1.) + comp_half);
  real q_new = real(0.);
  if (!(delvc > real(0.))) {
    const real ssc =
        sound_speed_sq_root((half.pbvc * e_new + vhalf * vhalf * half.bvc * half.p) / rho0);
    q_new = ssc * ql_old + qq_old;
  }
  e_new = e_new + real(0.5) * delvc * (real(3.0) * (p_old + q_old) - real(4.0) * (half.p + q_new));
  e_new += real(0.5) * work;
  if (std::fabs(e_new) < c.e_cut) e_new = real(0.);
  if (e_new < c.emin) e_new = c.emin;
  pressure full = eos_pressure(c, e_new, compression, vnewc);
  real q_tilde = real(0.);
  if (!(delvc > real(0.))) {
    const real ssc =
        sound_speed_sq_root((full.pbvc * e_new + vnewc * vnewc * full.bvc * full.p) / rho0);
    q_tilde = ssc * ql_old + qq_old;
  }
  const real sixth = real(1.0) / real(6.0);
  e_new =
      e_new - (real(7.0) * (p_old + q_old) - real(8.0) * (half.p + q_new) + (full.p + q_tilde)) *
                  delvc * sixth;
  if (std::fabs(e_new) < c.e_cut) e_new = real(0.);
  if (e_new < c.emin) e_new = c.emin;
  full = eos_pressure(c, e_new, compression, vnewc);
  if (delvc <= real(0.)) {
    const real ssc =
        sound_speed_sq_root((full.pbvc * e_new + vnewc * vnewc * full.bvc * full.p) / rho0);
    q_new = ssc * ql_old + qq_old;
    if (std::fabs(q_new) < c.q_cut) q_new = real(0.);
  }
  return {full.p, e_new, q_new, full.bvc, full.pbvc};
}

inline real clamp_volume(const constants& c, real v) {
  if (c.eosvmin != real(0.) && v < c.eosvmin) v = c.eosvmin;
  if (c.eosvmax != real(0.) && v > c.eosvmax) v = c.eosvmax;
  return v;
}

}  // namespace

dt_bounds element_material(domain& d, index_t begin, index_t end) {
  const constants& c = d.k;
  for (index_t k = begin; k < end; ++k) {
    if (d.q[k] > c.qstop)
      throw physics_error("lulesh: excessive artificial viscosity", qstop_error);
    monotonic_q(d, k);
  }
  for (index_t k = begin; k < end; ++k) {
    const real vnewc = clamp_volume(c, d.vnew[k]);
    if (clamp_volume(c, d.v[k]) <= 0.)
      throw physics_error("lulesh: negative volume (EOS)", volume_error);
    // A region's cost: its EOS is evaluated eos_reps times; every evaluation starts from the
    // same state, so only the last one's result is kept.
    eos_state s{};
    for (std::int32_t rep = d.eos_reps[k]; rep > 0; --rep) s = evaluate_eos(d, k, vnewc);
    d.p[k] = s.p;
    d.e[k] = s.e;
    d.q[k] = s.q;
    d.ss[k] = sound_speed_sq_root((s.pbvc * s.e + vnewc * vnewc * s.bvc * s.p) / c.refdens);
    real v = d.vnew[k];
    if (std::fabs(v - real(1.0)) < c.v_cut) v = real(1.0);
    d.v[k] = v;
  }
  dt_bounds b;
  const real qqc2 = real(64.0) * c.qqc * c.qqc;
  for (index_t k = begin; k < end; ++k) {
    const real vdov = d.vdov[k];
    if (vdov == real(0.)) continue;
    real dtf = d.ss[k] * d.ss[k];
    if (vdov < real(0.)) dtf = dtf + qqc2 * d.arealg[k] * d.arealg[k] * vdov * vdov;
    dtf = d.arealg[k] / std::sqrt(dtf);
    if (dtf < b.courant) b.courant = dtf;
    const real dtdvov = c.dvovmax / (std::fabs(vdov) + real(1.e-20));
    if (b.hydro > dtdvov) b.hydro = dtdvov;
  }
  return b;
}

void advance_time(domain& d, dt_bounds mesh) {
  const constants& c = d.k;
  real target = c.stoptime - d.time;
  if (d.cycle != 0) {
    real limit = real(1.0e+20);
    if (mesh.courant < limit) limit = mesh.courant / real(2.0);
    if (mesh.hydro < limit) limit = mesh.hydro * real(2.0) / real(3.0);
    const real olddt = d.deltatime;
    real newdt = limit;
    const real ratio = newdt / olddt;
    if (ratio >= real(1.0)) {
      if (ratio < c.deltatime_mult_lb)
        newdt = olddt;
      else if (ratio > c.deltatime_mult_ub)
        newdt = olddt * c.deltatime_mult_ub;
    }
    if (newdt > c.dtmax) newdt = c.dtmax;
    d.deltatime = newdt;
    d.dtcourant = mesh.courant;
    d.dthydro = mesh.hydro;
  }
  // Avoid a tiny last step: split what is left in two when it is just over one step.
  if (target > d.deltatime && target < real(4.0) * d.deltatime / real(3.0))
    target = real(2.0) * d.deltatime / real(3.0);
  if (target < d.deltatime) d.deltatime = target;
  d.time += d.deltatime;
  ++d.cycle;
}

}  // namespace lulesh
