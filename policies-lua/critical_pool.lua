-- critical_pool.lua — split the workers between the critical pool and the default pool while
-- the program runs: move workers towards the pool whose tasks wait longer, settle, say why.
--
-- Reads, for P = the critical pool and "default", every counter sample:
--   /threads{locality#0/pool#P/total}/wait-time/staged-sum, staged-count    Σ and n of the
--   /threads{locality#0/pool#P/total}/wait-time/pending-sum, pending-count  staged and pending
--        waits: their differences give the average wait of a task of P over the window
--   /threads{locality#0/pool#P/total}/time/overall, time/cumulative         Σt_func, Σt_exec:
--        the idle rate of P over the window, (ΔΣt_func − ΔΣt_exec) / ΔΣt_func
-- Changes: pool.<pool>.share (workers serving the critical pool; the others serve default)
-- Why:     Jiang et al. 2020 speed up Cholesky by a third and merge sort by almost half with
--          a pool of its own for the critical tasks — but with the split (c, d) chosen by hand
--          per machine, and the time is sensitive to it (their Fig. 6–9); they name tuning it
--          as open. A pool whose tasks wait longer than the other's (its staged + pending wait,
--          the paper's Fig. 8 quantities) has too few workers: a worker moves to it when its
--          wait exceeds `ratio` × the other's for `patience` windows in a row. Without wait
--          samples (a pool ran nothing measurable), a pool idle above `idle_high` gives a
--          worker to one idle below `idle_low`. After a move it waits `cooldown` windows for
--          the counters to show the new split. A move that undoes the previous one is a
--          reversal: after `max_reversals` of them it settles on the better side and stops.
-- Paper:   Jiang et al. 2020 (decoupled pools and their wait-time counters).
--
-- Settings (M.defaults below), from a global CRITICAL_POOL table set by a policy loaded before
-- this one, or from require("critical_pool").start{ pool = "critical", window = 5, ... }.

local M = {}

M.defaults = {
  pool = "critical",   -- the pool whose share it moves (the other one is "default")
  window = 5,          -- samples per decision window (the sampler's --grain:sample-interval)
  ratio = 1.5,         -- a pool whose tasks wait this much longer gets a worker ...
  patience = 2,        -- ... after this many windows in a row
  cooldown = 1,        -- windows it waits after a move
  idle_high = 0.5,     -- without waits: a pool idle above this gives a worker ...
  idle_low = 0.1,      -- ... to one idle below this
  max_reversals = 2,   -- moves that undo the previous one before it settles
  min_waits = 4,       -- measured waits a pool needs in a window for its average to count
}

local function pool_reader(name)
  local prefix = "/threads{locality#0/pool#" .. name .. "/total}/"
  local names = {
    ss = prefix .. "wait-time/staged-sum", sn = prefix .. "wait-time/staged-count",
    ps = prefix .. "wait-time/pending-sum", pn = prefix .. "wait-time/pending-count",
    func = prefix .. "time/overall", exec = prefix .. "time/cumulative",
  }
  return function()
    local v = {}
    for k, n in pairs(names) do
      local x = grain.counter(n)
      if x == nil then return nil end
      v[k] = x
    end
    return v
  end
end

-- The window's average wait (ns) and idle rate of one pool from two readings.
local function window_stats(a, b, min_waits)
  local n = (b.sn - a.sn) + (b.pn - a.pn)
  local wait = nil
  if n >= min_waits then wait = ((b.ss - a.ss) + (b.ps - a.ps)) / n end
  local dfunc = b.func - a.func
  local idle = nil
  if dfunc > 0 then idle = math.max(0, math.min(1, (dfunc - (b.exec - a.exec)) / dfunc)) end
  return wait, idle, n
end

local function fmt_us(ns)
  if ns == nil then return "-" end
  return string.format("%.1f us", ns / 1000)
end

function M.start(given)
  local cfg = grain.settings(M.defaults, given)
  local pool, window, ratio, patience = cfg.pool, cfg.window, cfg.ratio, cfg.patience
  local cooldown, idle_high, idle_low = cfg.cooldown, cfg.idle_high, cfg.idle_low
  local max_reversals, min_waits = cfg.max_reversals, cfg.min_waits
  assert(ratio > 1, "critical_pool: ratio must be above 1")
  assert(idle_low < idle_high, "critical_pool: idle_low must be below idle_high")

  local knob = grain.knob("pool." .. pool .. ".share")
  local read_c, read_d = pool_reader(pool), pool_reader("default")
  local start_c, start_d = nil, nil
  local samples, wait_windows = 0, 0
  local streak_dir, streak = 0, 0
  local last_dir, reversals = 0, 0
  local settled = false
  local best = {}  -- share -> average of max(wait_c, wait_d) seen there, for settling

  return grain.on("sample", function()
    if settled then return end
    local c, d = read_c(), read_d()
    if c == nil or d == nil then return end            -- counters not there (yet)
    if start_c == nil or c.func < start_c.func then    -- first reading, or counters reset
      start_c, start_d, samples = c, d, 0
      return
    end
    samples = samples + 1
    if samples < window then return end
    local wc, ic, nc = window_stats(start_c, c, min_waits)
    local wd, id, nd = window_stats(start_d, d, min_waits)
    start_c, start_d, samples = c, d, 0
    if wait_windows > 0 then                           -- cooling down after a move
      wait_windows = wait_windows - 1
      return
    end
    local share = knob:get()
    local info = knob:info()
    if wc and wd then
      local worst = math.max(wc, wd)
      local b = best[share]
      best[share] = b and (b + worst) / 2 or worst
    end

    local dir, why = 0, nil
    if wc and wd then
      if wc > ratio * wd then
        dir = 1
        why = string.format("%s tasks wait %s, default %s (> %.2fx)", pool, fmt_us(wc), fmt_us(wd), ratio)
      elseif wd > ratio * wc then
        dir = -1
        why = string.format("default tasks wait %s, %s %s (> %.2fx)", fmt_us(wd), pool, fmt_us(wc), ratio)
      end
    elseif ic and id then                               -- no waits to compare: idleness
      if ic > idle_high and id < idle_low then
        dir = -1
        why = string.format("%s idle %.2f > %.2f, default idle %.2f < %.2f", pool, ic, idle_high, id, idle_low)
      elseif id > idle_high and ic < idle_low then
        dir = 1
        why = string.format("default idle %.2f > %.2f, %s idle %.2f < %.2f", id, idle_high, pool, ic, idle_low)
      end
    end
    if dir == 0 then
      streak_dir, streak = 0, 0
      return
    end
    if dir ~= streak_dir then streak_dir, streak = dir, 0 end
    streak = streak + 1
    if streak < patience then return end
    streak = 0
    local target = share + dir
    if target < info.min or target > info.max then return end  -- already at the edge

    if last_dir ~= 0 and dir ~= last_dir then
      reversals = reversals + 1
      if reversals >= max_reversals then
        -- Oscillating between two splits: keep the one whose worse pool waited less.
        local here, there = best[share], best[target]
        local keep = share
        if here and there and there < here then keep = target end
        settled = true
        local reason = string.format(
          "settled after %d reversals: %s (worse wait %s at %d, %s at %d); idle %s %.2f, default %.2f",
          reversals, why, fmt_us(here), share, fmt_us(there), target, pool, ic or -1, id or -1)
        knob:set(keep, reason)  -- records only if it moves back; the log line always says why
        grain.log.info("critical_pool: pool." .. pool .. ".share " .. keep .. ": " .. reason)
        return
      end
    end
    last_dir = dir
    knob:set(target, string.format("%s; idle %s %.2f, default %.2f (%d + %d waits): %s worker",
      why, pool, ic or -1, id or -1, nc, nd, dir > 0 and ("one more " .. pool) or "one more default"))
    wait_windows = cooldown
  end, "critical_pool:" .. pool)
end

if ... == nil then   -- loaded with --grain:policy (not through require)
  M.start(CRITICAL_POOL)
end
return M
