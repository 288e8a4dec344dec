-- adaptive_grain.lua — find an efficient task grain size online (seed 000).
--
-- Reads, as differences over each window (one application iteration by default):
--   /threads/time/overall      Σt_func: worker time in the scheduling loop, busy or idle
--   /threads/time/cumulative   Σt_exec: worker time inside tasks
--   /threads/time/idle         time spent looking for work and finding none
--   /threads/count/cumulative  n_t: tasks completed
--   /threads/count/pending-accesses, -misses   (reported in the reasons, seed 000 IV-E)
--   and the iteration event's payload: the grain the step ran with (`nx`) and its duration.
-- From these (seed 000 Eq. 1-4, over the window, not since the start):
--   t_d = ΔΣt_exec / Δn_t                    task duration
--   t_o = (ΔΣt_func - ΔΣt_exec) / Δn_t       task overhead
--   idle-rate = (ΔΣt_func - ΔΣt_exec) / ΔΣt_func
-- and the idle-rate split into its two causes, which seed 000 shows at the two ends of the
-- partition-size sweep:
--   management share = (ΔΣt_func - ΔΣt_exec - Δidle) / ΔΣt_func   (fine grain: the scheduler
--                      creates, queues and switches to tasks too small for that cost)
--   starvation share = Δidle / ΔΣt_func                           (coarse grain: too few
--                      partitions to keep every worker busy; workers search and find nothing)
-- Changes: the grain knob (`stencil.nx` by default; any integer or double knob whose larger
--          values mean larger tasks).
-- Why:     seed 000 (Grubel et al.): execution time is high for very fine tasks (management
--          overhead) and very coarse ones (starvation), flat in between. The policy
--            * coarsens while the management share is above `overhead_high`, by the factor that
--              would bring it to `overhead_target` (the share falls like 1/grain),
--            * refines while the starvation share is above `starvation_high`, likewise,
--            * holds in between: the efficient region.
--          Steps are multiplicative (the sweep spans decades) and capped by `max_factor`.
--          The grain values it has judged too fine / too coarse bracket the efficient region;
--          a move never leaves the bracket (it bisects it geometrically instead), and the cap
--          shrinks to its square root at every change of direction, so the policy cannot
--          oscillate for ever. It also compares iteration times: a move that made iterations
--          slower by more than `slowdown` than the best grain seen is undone (the counters do
--          not see everything: cache effects, seed 000's wait time). It settles after
--          `settle_after` windows in a row without a move, or when the bracket is narrower than
--          `settle_ratio`; settled, it re-opens only when one condition persists for `patience`
--          windows (at most `max_reopen` times, each time with a smaller cap).
-- Every knob change is a decision record (log, summary, trace) whose reason gives the shares,
-- t_d, t_o, idle-rate and pending misses of the window; settling is logged at info level.
--
-- Windows: with trigger = "iteration" (default) a window is one application step, delimited
-- by two iteration events; the counters are those of the latest snapshot, so the application
-- should take one right before raising the event (grain::instrumentation::sample_now(), as
-- grain-stencil does) or run with a sample interval well below the step time. A step that ran
-- with another grain than the knob's current value (the event's `nx_field`) is skipped: the
-- change has not reached the application yet. Without `nx_field` in the payload the first
-- `skip` events after a change are skipped. With trigger = <number> the window is that many
-- milliseconds (grain.every), for applications without iteration events.
--
-- Configuration: a global ADAPTIVE_GRAIN table set by a policy loaded before this one, e.g.
--   ADAPTIVE_GRAIN = { knob = "my.chunk", overhead_high = 0.05 }
--   --grain:policy=my_settings.lua --grain:policy=policies-lua/adaptive_grain.lua
-- or require("adaptive_grain").start{...}. The keys and their defaults are in `defaults`
-- below; docs/policies.md explains them with measurements.

local M = {}

M.defaults = {
  knob = "stencil.nx",          -- the grain knob (larger = coarser)
  trigger = "iteration",        -- event name, or a period in ms
  nx_field = "nx",              -- payload field: the grain the step ran with (nil: unknown)
  duration_field = "duration_ns",  -- payload field: the step's duration (nil: no time guard)
  instance = "locality#0/total",   -- counter instance the shares are computed over
  overhead_high = 0.05,         -- coarsen above this management share of worker time
  overhead_target = 0.02,       -- ... aiming at this share
  starvation_high = 0.05,       -- refine above this starvation share of worker time
  starvation_target = 0.02,     -- ... aiming at this share
  max_factor = 64,              -- largest first step (multiplicative)
  min_factor = 1.25,            -- smaller steps are not worth a re-partition: hold
  settle_ratio = 1.5,           -- bracket hi/lo below this: settled
  settle_after = 3,             -- windows in a row without a move: settled
  slowdown = 1.15,              -- undo a move whose iteration is this much slower than the best
  skip = 1,                     -- windows skipped after a change when nx_field is absent
  patience = 3,                 -- settled: windows a condition must persist to re-open
  reopen_factor = 4,            -- cap of the first step after re-opening (then its root, ...)
  max_reopen = 3,               -- re-openings at most
  name = "adaptive_grain",      -- rule name of the decisions
}

local function fmt_time(ns)
  if ns >= 1e6 then return string.format("%.2f ms", ns / 1e6) end
  if ns >= 1e3 then return string.format("%.1f us", ns / 1e3) end
  return string.format("%.0f ns", ns)
end

-- Differences of the monotonic counters between two readings; nil when not measurable.
local function window_metrics(a, b)
  local dn = b.n - a.n
  local dfunc, dexec, didle = b.func - a.func, b.exec - a.exec, b.idle - a.idle
  if dn <= 0 or dfunc <= 0 then return nil end
  local m = {
    tasks = dn,
    t_d = dexec / dn,
    t_o = (dfunc - dexec) / dn,
    idle_rate = (dfunc - dexec) / dfunc,
    starvation = math.max(0, didle) / dfunc,
  }
  m.management = math.max(0, dfunc - dexec - math.max(0, didle)) / dfunc
  local dacc = (b.acc or 0) - (a.acc or 0)
  m.miss_rate = dacc > 0 and ((b.miss or 0) - (a.miss or 0)) / dacc or nil
  return m
end

function M.start(user)
  local cfg = {}
  for k, v in pairs(M.defaults) do cfg[k] = v end
  for k, v in pairs(user or {}) do
    if M.defaults[k] == nil and k ~= "nx_field" and k ~= "duration_field" then
      error("adaptive_grain: unknown setting '" .. tostring(k) .. "'", 2)
    end
    cfg[k] = v
  end
  if user and user.nx_field == false then cfg.nx_field = nil end
  if user and user.duration_field == false then cfg.duration_field = nil end
  assert(cfg.overhead_target < cfg.overhead_high, "adaptive_grain: overhead_target >= overhead_high")
  assert(cfg.starvation_target < cfg.starvation_high,
         "adaptive_grain: starvation_target >= starvation_high")
  assert(cfg.max_factor > 1 and cfg.min_factor > 1, "adaptive_grain: factors must be > 1")

  local knob = grain.knob(cfg.knob)
  local info = knob:info()
  assert(info.type == "int" or info.type == "double",
         "adaptive_grain: knob " .. cfg.knob .. " is " .. info.type .. ", not a number")
  local prefix = "/threads{" .. cfg.instance .. "}/"

  -- The policy's state, visible to tests and other policies as M.state.
  local st = {
    phase = "searching",   -- searching | settled
    lo = nil, hi = nil,    -- grains judged too fine / too coarse (the bracket)
    cap = cfg.max_factor,  -- largest factor of the next move
    last_dir = 0,          -- +1 coarsened, -1 refined
    quiet = 0,             -- windows in a row without a move
    persist = 0, persist_dir = 0,  -- settled: a condition seen this many windows in a row
    reopened = 0,
    skip = 0,
    moves = 0,
    times = {},            -- grain value -> latest clean step duration (ns)
    why = nil,             -- why it settled
    last = nil,            -- metrics of the latest window
  }
  M.state = st
  local base = nil         -- counter reading at the start of the window
  local last_seq = -1      -- sequence of the latest snapshot seen
  local seq_at_base = -1
  local warned = false

  local function read()
    local r = {}
    r.func = grain.counter(prefix .. "time/overall")
    r.exec = grain.counter(prefix .. "time/cumulative")
    r.idle = grain.counter(prefix .. "time/idle")
    r.n = grain.counter(prefix .. "count/cumulative")
    r.acc = grain.counter(prefix .. "count/pending-accesses")
    r.miss = grain.counter(prefix .. "count/pending-misses")
    if not (r.func and r.exec and r.idle and r.n) then return nil end
    return r
  end

  local function best_time()
    local bx, bt = nil, nil
    for x, t in pairs(st.times) do
      if not bt or t < bt then bx, bt = x, t end
    end
    return bx, bt
  end

  local function settle(why)
    if st.phase ~= "settled" then
      st.phase, st.why = "settled", why
      st.settled_ns = st.times[knob:get()]
      grain.log.info(string.format("adaptive_grain: settled at %s = %s: %s", cfg.knob,
                                   tostring(knob:get()), why))
    end
  end

  -- Move the knob from x by `factor` in direction dir (+1 coarser, -1 finer).
  local function move(x, dir, factor, why)
    factor = math.min(factor, st.cap)
    if factor < cfg.min_factor then
      settle(string.format("next step x%.2f is below min_factor %.2f (%s)", factor,
                           cfg.min_factor, why))
      return false
    end
    if st.last_dir ~= 0 and dir ~= st.last_dir then
      st.cap = math.max(1, math.sqrt(st.cap))   -- changed direction: smaller steps from now
      factor = math.min(factor, st.cap)
    end
    local target = dir > 0 and x * factor or x / factor
    -- Stay strictly inside the bracket: bisect geometrically when the step would leave it.
    if dir > 0 and st.hi and target >= st.hi then target = math.sqrt(x * st.hi) end
    if dir < 0 and st.lo and target <= st.lo then target = math.sqrt(x * st.lo) end
    if info.type == "int" then target = math.floor(target + 0.5) end
    if dir > 0 then st.lo = x else st.hi = x end
    if st.lo and st.hi and st.hi / st.lo < cfg.settle_ratio then
      settle(string.format("bracket [%s, %s] narrower than x%.2f", tostring(st.lo),
                           tostring(st.hi), cfg.settle_ratio))
      return false
    end
    local v, clamped = knob:set(target, why)
    if v == x then
      settle(string.format("%s is at its limit %s (%s)", cfg.knob, tostring(x), why))
      return false
    end
    st.last_dir, st.quiet, st.moves = dir, 0, st.moves + 1
    st.skip = cfg.skip
    return true, clamped
  end

  -- One window: the step (or period) that just ended ran with grain x.
  local function decide(m, x, duration)
    st.last = m
    if duration and duration > 0 then st.times[x] = duration end
    local detail = string.format(
        "t_d %s, t_o %s, idle-rate %.2f, management %.0f%%, starvation %.0f%%%s",
        fmt_time(m.t_d), fmt_time(m.t_o), m.idle_rate, 100 * m.management,
        100 * m.starvation,
        m.miss_rate and string.format(", pending misses %.0f%%", 100 * m.miss_rate) or "")

    -- The time guard: a grain whose iterations are clearly slower than the best one seen.
    local bx, bt = best_time()
    if st.phase == "searching" and bx and bx ~= x and duration and
        duration > cfg.slowdown * bt then
      if bx > x then st.lo = math.max(st.lo or x, x) else st.hi = math.min(st.hi or x, x) end
      st.cap = math.max(1, math.sqrt(st.cap))
      knob:set(bx, string.format("iteration %s at %s = %s is %.2fx the %s at %s: back (%s)",
                                 fmt_time(duration), cfg.knob, tostring(x), duration / bt,
                                 fmt_time(bt), tostring(bx), detail))
      st.last_dir, st.quiet, st.skip = (bx > x) and 1 or -1, 0, cfg.skip
      st.moves = st.moves + 1
      return
    end

    local dir, factor, why = 0, 1, nil
    if m.management > cfg.overhead_high and m.management >= m.starvation then
      dir, factor = 1, m.management / cfg.overhead_target
      why = string.format("management %.0f%% of worker time > %.0f%%: coarsen", 100 * m.management,
                          100 * cfg.overhead_high)
    elseif m.starvation > cfg.starvation_high then
      dir, factor = -1, m.starvation / cfg.starvation_target
      why = string.format("starvation %.0f%% of worker time > %.0f%%: refine", 100 * m.starvation,
                          100 * cfg.starvation_high)
    end

    if st.phase == "settled" then
      -- Only a condition that comes with slower iterations than when it settled counts: the
      -- counters may have said the same then (the time guard or a bracket overruled them).
      local then_ns = st.settled_ns
      if dir ~= 0 and duration and then_ns and duration <= cfg.slowdown * then_ns then dir = 0 end
      if dir ~= 0 and dir == st.persist_dir then
        st.persist = st.persist + 1
      else
        st.persist, st.persist_dir = dir ~= 0 and 1 or 0, dir
      end
      if dir == 0 or st.persist < cfg.patience or st.reopened >= cfg.max_reopen then return end
      -- The conditions changed for good (another input phase, other load): search again,
      -- from what the clock says now.
      st.reopened = st.reopened + 1
      st.phase, st.why = "searching", nil
      st.cap = cfg.reopen_factor ^ (0.5 ^ (st.reopened - 1))
      st.lo, st.hi, st.last_dir, st.times = nil, nil, 0, { [x] = duration }
      st.persist, st.persist_dir = 0, 0
      why = why .. string.format(" (for %d windows while settled: re-opened)", cfg.patience)
    end

    if dir == 0 then
      st.quiet = st.quiet + 1
      if st.quiet >= cfg.settle_after then
        settle(string.format("%d windows in the efficient region (%s)", st.quiet, detail))
      end
      return
    end
    move(x, dir, factor, string.format("%s x%.1f (%s)", why, math.min(factor, st.cap), detail))
  end

  local function on_window(x, duration)
    local now = read()
    if not now then
      if not warned then
        warned = true
        grain.log.warn("adaptive_grain: the timing counters (" .. prefix ..
                       "time/...) are unavailable (built with GRAIN_TIMING=OFF?): holding")
      end
      return
    end
    if base == nil or now.n < base.n or now.func < base.func then  -- first, or counters reset
      base, seq_at_base = now, last_seq
      return
    end
    if last_seq == seq_at_base then return end  -- no new snapshot: let the window grow
    local a = base
    base, seq_at_base = now, last_seq
    if st.skip > 0 then                         -- the window straddles the last change
      st.skip = st.skip - 1
      return
    end
    local m = window_metrics(a, now)
    if m then decide(m, x, duration) end
  end

  grain.on("sample", function(s) last_seq = s.sequence end, cfg.name .. ":samples")

  if type(cfg.trigger) == "number" then
    return grain.every(cfg.trigger, function() on_window(knob:get(), nil) end, cfg.name)
  end
  return grain.on(cfg.trigger, function(ev)
    local x = knob:get()
    local ran = cfg.nx_field and ev[cfg.nx_field]
    if ran ~= nil and ran ~= x then
      -- This step ran with an older grain: the change has not reached the application yet.
      -- Start the window after it, without the skip count (the payload tells us exactly).
      st.skip = 0
      base = read()
      seq_at_base = last_seq
      return
    end
    if ran ~= nil then st.skip = 0 end
    on_window(x, cfg.duration_field and ev[cfg.duration_field] or nil)
  end, cfg.name)
end

if ... == nil then   -- loaded with --grain:policy (not through require)
  M.start(ADAPTIVE_GRAIN)
end
return M
