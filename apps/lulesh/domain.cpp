// Building a LULESH domain: mesh, connectivity, boundary conditions, regions, initial state.
#include "domain.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "element_math.hpp"

namespace lulesh {

index_t ghost_elements(const domain& d) {
  return 6 * d.size * d.size;
}

domain::domain(const problem& pr, index_t c, index_t r, index_t pl, int rank)
    : prob(pr), col(c), row(r), plane(pl), size(pr.size) {
  const auto s = static_cast<std::size_t>(size);
  num_elem = size * size * size;
  num_node = (size + 1) * (size + 1) * (size + 1);
  const auto ne = static_cast<std::size_t>(num_elem), nn = static_cast<std::size_t>(num_node);
  for (auto* f : {&x, &y, &z, &xd, &yd, &zd, &fx, &fy, &fz, &nodal_mass}) f->assign(nn, 0.0);
  node_symm.assign(nn, 0);
  nodelist.assign(8 * ne, 0);
  for (auto* f : {&lxim, &lxip, &letam, &letap, &lzetam, &lzetap}) f->assign(ne, 0);
  elem_bc.assign(ne, 0);
  for (auto* f : {&e, &p, &q, &ql, &qq, &v, &volo, &vnew, &delv, &vdov, &arealg, &ss, &elem_mass,
                  &delx_xi, &delx_eta, &delx_zeta})
    f->assign(ne, 0.0);
  const std::size_t with_ghosts = ne + 6 * s * s;
  for (auto* f : {&delv_xi, &delv_eta, &delv_zeta}) f->assign(with_ghosts, 0.0);
  for (auto* f : {&fx_stress, &fy_stress, &fz_stress, &fx_hg, &fy_hg, &fz_hg})
    f->assign(8 * ne, 0.0);
  build_mesh();
  build_corner_lists();
  build_regions(rank);
  build_connectivity();
  build_boundary_conditions();
  init_state();
}

// Node coordinates: the whole cube of domains spans [0, 1.125]^3.
void domain::build_mesh() {
  const index_t edge_nodes = size + 1;
  const real mesh_edge = real(prob.side * size);
  auto coord = [&](index_t loc, index_t i) {
    return real(1.125) * real(loc * size + i) / mesh_edge;
  };
  index_t n = 0;
  for (index_t k = 0; k < edge_nodes; ++k)
    for (index_t j = 0; j < edge_nodes; ++j)
      for (index_t i = 0; i < edge_nodes; ++i, ++n) {
        x[n] = coord(col, i);
        y[n] = coord(row, j);
        z[n] = coord(plane, k);
        node_symm[n] =
            std::uint8_t((col == 0 && i == 0 ? symm_x : 0) | (row == 0 && j == 0 ? symm_y : 0) |
                         (plane == 0 && k == 0 ? symm_z : 0));
      }
  index_t el = 0;
  for (index_t k = 0; k < size; ++k)
    for (index_t j = 0; j < size; ++j)
      for (index_t i = 0; i < size; ++i, ++el) {
        const index_t n0 = (k * edge_nodes + j) * edge_nodes + i;
        const index_t up = edge_nodes * edge_nodes;
        index_t* nl = &nodelist[8 * static_cast<std::size_t>(el)];
        nl[0] = n0;
        nl[1] = n0 + 1;
        nl[2] = n0 + edge_nodes + 1;
        nl[3] = n0 + edge_nodes;
        nl[4] = n0 + up;
        nl[5] = n0 + up + 1;
        nl[6] = n0 + up + edge_nodes + 1;
        nl[7] = n0 + up + edge_nodes;
      }
}

void domain::build_corner_lists() {
  node_corner_start.assign(static_cast<std::size_t>(num_node) + 1, 0);
  for (index_t c = 0; c < 8 * num_elem; ++c) ++node_corner_start[nodelist[c] + 1];
  for (index_t n = 0; n < num_node; ++n) node_corner_start[n + 1] += node_corner_start[n];
  node_corners.assign(static_cast<std::size_t>(8 * num_elem), 0);
  std::vector<index_t> fill(node_corner_start.begin(), node_corner_start.end() - 1);
  for (index_t c = 0; c < 8 * num_elem; ++c) node_corners[fill[nodelist[c]]++] = c;
}

// Regions: runs of consecutive elements of random length, each given a random region, with
// region r+1 picked with weight (r+1)^balance; the generator is seeded with the rank, so the
// assignment is that of the reference on every rank. A region's index decides how many times
// its EOS is evaluated: the first half once, most of the rest 1 + cost times, the last ~5 %
// 10 (1 + cost) times. Only the cost changes: every evaluation computes the same values.
void domain::build_regions(int rank) {
  const index_t nr = prob.regions;
  region.assign(static_cast<std::size_t>(num_elem), 0);
  if (nr > 1) {
    std::srand(static_cast<unsigned>(rank));
    std::vector<int> bin_end(static_cast<std::size_t>(nr));
    int denominator = 0;
    for (index_t i = 0; i < nr; ++i) {
      denominator = static_cast<int>(denominator + std::pow(i + 1, prob.balance));
      bin_end[i] = denominator;
    }
    auto draw_region = [&] {
      const int var = std::rand() % denominator;
      index_t i = 0;
      while (var >= bin_end[i]) ++i;
      return (i + rank) % nr;
    };
    index_t next = 0, last = -1;
    while (next < num_elem) {
      index_t reg = draw_region();
      while (reg == last) reg = draw_region();
      // Run lengths: mostly short, sometimes up to 2048 elements.
      const int bin = std::rand() % 1000;
      index_t run;
      if (bin < 773)
        run = std::rand() % 15 + 1;
      else if (bin < 937)
        run = std::rand() % 16 + 16;
      else if (bin < 970)
        run = std::rand() % 32 + 32;
      else if (bin < 974)
        run = std::rand() % 64 + 64;
      else if (bin < 978)
        run = std::rand() % 128 + 128;
      else if (bin < 981)
        run = std::rand() % 256 + 256;
      else
        run = std::rand() % 1537 + 512;
      for (const index_t stop = next + run; next < stop && next < num_elem; ++next)
        region[next] = reg;
      last = reg;
    }
  }
  region_size.assign(static_cast<std::size_t>(nr), 0);
  for (index_t r : region) ++region_size[r];
  eos_reps.assign(static_cast<std::size_t>(num_elem), 1);
  for (index_t i = 0; i < num_elem; ++i) {
    const index_t r = region[i];
    eos_reps[i] = r < nr / 2 ? 1 : r < nr - (nr + 15) / 20 ? 1 + prob.cost : 10 * (1 + prob.cost);
  }
}

// Face neighbours inside the domain (an element on the boundary is its own neighbour until
// the boundary conditions say otherwise).
void domain::build_connectivity() {
  const index_t n = num_elem, s = size, s2 = size * size;
  for (index_t i = 0; i < n; ++i) {
    lxim[i] = i == 0 ? 0 : i - 1;
    lxip[i] = i == n - 1 ? n - 1 : i + 1;
    letam[i] = i < s ? i : i - s;
    letap[i] = i >= n - s ? i : i + s;
    lzetam[i] = i < s2 ? i : i - s2;
    lzetap[i] = i >= n - s2 ? i : i + s2;
  }
}

// Symmetry planes at x, y, z = 0, free surfaces at the far sides of the cube of domains, and
// between domains the neighbour's elements in ghost slots: z-, z+, y-, y+, x-, x+ faces in that
// order, each present only where there is a neighbour.
void domain::build_boundary_conditions() {
  const index_t s = size, s2 = s * s, last = prob.side - 1;
  index_t ghost[6];
  index_t next = num_elem;
  const bool has[6] = {plane > 0, plane<last, row> 0, row<last, col> 0, col < last};
  for (int f = 0; f < 6; ++f) {
    ghost[f] = has[f] ? next : INT_MIN;
    if (has[f]) next += s2;
  }
  for (index_t i = 0; i < s; ++i)
    for (index_t j = 0; j < s; ++j) {
      const index_t ghost_at = i * s + j;  // position within a face's ghost block
      const index_t zlo = i * s + j, zhi = zlo + num_elem - s2;
      const index_t ylo = i * s2 + j, yhi = ylo + s2 - s;
      const index_t xlo = i * s2 + j * s, xhi = xlo + s - 1;
      if (plane == 0) {
        elem_bc[zlo] |= zeta_m_symm;
      } else {
        elem_bc[zlo] |= zeta_m_comm;
        lzetam[zlo] = ghost[0] + ghost_at;
      }
      if (plane == last) {
        elem_bc[zhi] |= zeta_p_free;
      } else {
        elem_bc[zhi] |= zeta_p_comm;
        lzetap[zhi] = ghost[1] + ghost_at;
      }
      if (row == 0) {
        elem_bc[ylo] |= eta_m_symm;
      } else {
        elem_bc[ylo] |= eta_m_comm;
        letam[ylo] = ghost[2] + ghost_at;
      }
      if (row == last) {
        elem_bc[yhi] |= eta_p_free;
      } else {
        elem_bc[yhi] |= eta_p_comm;
        letap[yhi] = ghost[3] + ghost_at;
      }
      if (col == 0) {
        elem_bc[xlo] |= xi_m_symm;
      } else {
        elem_bc[xlo] |= xi_m_comm;
        lxim[xlo] = ghost[4] + ghost_at;
      }
      if (col == last) {
        elem_bc[xhi] |= xi_p_free;
      } else {
        elem_bc[xhi] |= xi_p_comm;
        lxip[xhi] = ghost[5] + ghost_at;
      }
    }
}

// Unit relative volume everywhere, masses from the initial volumes, and the blast: all the
// energy in the element at the origin of the whole cube.
void domain::init_state() {
  std::fill(v.begin(), v.end(), 1.0);
  for (index_t i = 0; i < num_elem; ++i) {
    hex h;
    const index_t* nl = &nodelist[8 * static_cast<std::size_t>(i)];
    gather_hex(*this, nl, h);
    const real volume = hex_volume(h.x, h.y, h.z);
    volo[i] = volume;
    elem_mass[i] = volume;
    for (int j = 0; j < 8; ++j) nodal_mass[nl[j]] += volume / real(8.0);
  }
  const real ebase = 3.948746e+7;
  const real scale = (size * prob.side) / real(45.0);
  const real einit = ebase * scale * scale * scale;
  if (row + col + plane == 0) e[0] = einit;
  deltatime = (real(.5) * std::cbrt(volo[0])) / std::sqrt(real(2.0) * einit);
  if (!(deltatime > 0)) throw std::runtime_error("lulesh: the initial time step is not positive");
}

}  // namespace lulesh
