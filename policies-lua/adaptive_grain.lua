-- adaptive_grain.lua — find an efficient task grain size online, and settle there.
--
-- Reads:   as differences over each window (between two counter snapshots, or two step
--          events), for this locality's total (`instance`):
--            /threads/time/overall      Σt_func: worker time in the scheduling loop
--            /threads/time/cumulative   Σt_exec: worker time inside tasks
--            /threads/time/idle         time spent looking for work and finding none
--            /threads/count/cumulative  n_t: tasks completed
--            /threads/time/preempted    P: time workers waited for a CPU (when the kernel
--                                       says; docs/counters.md, "Preemption")
--            /threads/count/pending-accesses, -misses   (only reported in the reasons)
--            /threads/count/active-workers              (until the start event says)
--          and the application's step event (`trigger`, grain-stencil's "iteration"): the
--          grain the step ran with (`nx_field`), its duration (`duration_field`) and its
--          number of tasks (`parts_field`).
-- Changes: the grain knob (`knob`, stencil.nx by default; any int or double knob whose larger
--          values mean larger tasks, e.g. a chunk size).
-- Why:     Grubel et al. 2015: execution time is high for very fine tasks (overhead) and very
--          coarse ones (starvation) and flat in between. The policy aims at one task duration
--          in the flat part, t* = aim * max(lambda * t_m, min_task_ns): a task should pay for
--          its management many times over (Wagle 2019's rule for inlining and chunking,
--          lambda as in loop.lambda) and be long enough that the costs inside it that do not
--          shrink with the grain do not dominate. It coarsens while tasks are too short for
--          that, refines while workers starve or a step has too few tasks for the workers,
--          checks every move against the step times (undoing one that made steps slower), and
--          settles. Each decision's reason gives the metrics it was taken on.
--
-- Settings (M.defaults below, grouped; docs/policies.md explains them with measurements),
-- from a global ADAPTIVE_GRAIN table set by a policy loaded before this one, or from
-- require("adaptive_grain").start{ knob = "my.chunk", lambda = 50 }; e.g.
--   --grain:policy=my_settings.lua --grain:policy=policies-lua/adaptive_grain.lua
-- with my_settings.lua containing:  ADAPTIVE_GRAIN = { knob = "my.chunk", lambda = 50 }
--
-- How it decides. The metrics of a window (Grubel et al. 2015, Eq. 1-4, over the window
-- rather than since the start), and the idle rate split into the two causes the paper finds
-- at the two ends of the partition-size sweep:
--   t_d = ΔΣt_exec / Δn_t                        task duration
--   t_o = (ΔΣt_func - ΔΣt_exec) / Δn_t           task overhead
--   idle-rate = (ΔΣt_func - ΔΣt_exec) / ΔΣt_func
--   t_m = (ΔΣt_func - ΔΣt_exec - Δidle) / Δn_t   management overhead per task (fine grain:
--         creating, queueing and switching to tasks)
--   starvation = Δidle / ΔΣt_func               share of worker time without work (coarse
--         grain: too few partitions to keep every worker busy)
-- Where the kernel reports P (time/preempted), the window takes it out of the time outside
-- tasks, O = ΔΣt_func - ΔΣt_exec, before these formulas (docs/counters.md, Eq. 1p, 3p, 3mp):
-- O' = max(0, O - P); t_o = O' / Δn_t; idle-rate = O' / (ΔΣt_func - P); t_m and starvation
-- keep their shares of O, scaled by O'/O, over ΔΣt_func - P. A worker preempted by another
-- process is then neither management (coarsen) nor starvation (refine). A window whose P is
-- more than `preempted_share` of O does not count for t_m (much of that wait fell inside
-- tasks: a time slice ends wherever the worker is, and what is left of O says little); the
-- plain t_m is used only while no window could count. Without P: as above.
-- t_m in t* is the least seen over windows of at least `min_tasks` tasks; "costs that do not
-- shrink with the grain" are allocations and futures, which the scheduler counts as execution
-- (the paper sees them as wait time). With t_d = a * grain + b fitted on the last two grains
-- seen (the first move, with one grain: b = fixed_share * t_d when coarsening; else, and when
-- the fit fails, b = 0), it
--   * coarsens while t_d < max(lambda * t_m, min_task_ns) / hysteresis, to the grain where
--     t_d = t* (after a move that max_factor cut short: while t_d < the bound itself, so that
--     the search does not stop just short of its target);
--   * refines while the starvation share is above `starvation_high` (in `confirm` snapshot
--     windows in a row, or one whole step), or while a step has fewer than
--     `partitions_per_worker` partitions per worker (`parts_field`), to the grain where
--     t_d = t*: as many partitions as still pay for themselves; never finer (a serial
--     producer, or the re-partitioning itself, starves workers at fine grain too); with too
--     few partitions, to at least `partitions_per_worker` per worker, and never coarser (a t_m
--     inflated by a loaded machine must not turn it round);
--   * on the very first step with fewer than `partitions_per_worker` partitions per worker,
--     refines at once, without waiting for a counter window, to `coarse_jump` partitions per
--     worker (grain * partitions / (coarse_jump * workers)): a coarse step is long and has few
--     tasks, so a window would take several steps, each of them a whole coarse step; the rules
--     above fine-tune. Where the application announces a step before it runs
--     (`start_trigger`, grain-stencil's "iteration-start"), the jump is taken then, while the
--     step runs, and an application whose running partitions follow the knob (grain-stencil
--     splits them) gains that step too;
--   * otherwise holds: the efficient region. Optionally (`gain`, off by default) it makes one
--     more step of at most `probe` in the direction of its last move when that move made
--     steps faster by `gain` (cache and page-fault effects show in the step time only); with
--     grain-stencil that costs more re-partitions than it wins.
-- Steps are multiplicative (the sweep spans decades), at most `max_factor`. The grains it
-- judged too fine / too coarse bracket the efficient region; a move never leaves the bracket
-- (it bisects it geometrically instead), and the step cap shrinks to its square root at every
-- change of direction, so it cannot oscillate for ever. A move that made steps slower than
-- the best grain seen by `slowdown` is undone. It settles after `settle_after` steps in a row
-- without a move (or when the bracket is narrower than `settle_ratio`, or at the end of the
-- knob's range); settled, it re-opens only when a condition persists for `patience` steps and
-- steps got `reopen_slowdown` slower than when it settled, at most `max_reopen` times, each
-- time with a smaller step cap.
-- Every knob change is a decision record (log, summary, trace: rule "adaptive_grain") whose
-- reason gives t_d, t_m, t_o, idle-rate, starvation, pending misses, the fit and, for
-- time-based moves, the step times; settling is logged at info level.
--
-- Timing: decisions are taken on counter snapshots as soon as a window holds `min_tasks`
-- completed tasks, so the first one comes one sample interval after start-up (the runtime's
-- --grain:sample-interval, 10 ms by default), or on a snapshot the application takes for it
-- (grain::instrumentation::sample_now(), then grain::settle_listeners() to wait for the
-- answer): grain-stencil takes one after a probe of its initial condition at the starting
-- grain (--settle-init, so the decision acts on step 0) and one at the end of its first step
-- (--settle, acting on step 1); then also on step events. After a change, windows are ignored until `warmup` steps with the new
-- grain were reported (`nx_field`; the first steps at a new size also re-partition and touch
-- new memory; without the field, `skip` + `warmup` - 1 events). Step times (`duration_field`)
-- are compared as means of the last 4 steps at a grain, once there are `min_steps` of them
-- (pipelined steps end in bursts; single step times are noise).

local M = {}

M.defaults = {
  -- What it moves, and under which name.
  knob = "stencil.nx",            -- the grain knob (larger = coarser)
  name = "adaptive_grain",        -- rule name of the decisions
  instance = grain.optional("string"),  -- counter instance of the metrics (default: this
                                  -- locality's total, "locality#" .. grain.locality .. "/total")
  -- What the application reports at the end of a step (false: it does not).
  trigger = grain.optional("string", "iteration"),        -- the step event (false: none)
  nx_field = grain.optional("string", "nx"),              -- the grain the step ran with
  duration_field = grain.optional("string", "duration_ns"),  -- its duration (false: no
                                                          -- time rules)
  parts_field = grain.optional("string", "partitions"),   -- its number of tasks
  start_trigger = grain.optional("string", "iteration-start"),  -- the event that announces a
                                  -- step before it runs, with nx_field and parts_field (false:
                                  -- none): the coarse jump then reaches that step's partitions
  -- The target task duration t* and when to coarsen towards it.
  lambda = 100,                   -- coarsen while t_d < lambda * t_m ...
  min_task_ns = 20000,            -- ... or t_d < this
  aim = 4,                        -- ... aiming at aim times that bound (refine: not below)
  hysteresis = 2,                 -- coarsen only below bound / hysteresis
  fixed_share = 0.75,             -- coarsening from one grain: share of t_d taken as fixed
  min_tasks = 8,                  -- tasks a snapshot window needs to be judged
  preempted_share = 0.5,          -- a window's t_m counts while the time its workers waited
                                  -- for a CPU (time/preempted) is at most this share of the
                                  -- time outside tasks
  -- When to refine.
  starvation_high = 0.15,         -- refine above this starvation share of worker time ...
  confirm = 2,                    -- ... in this many snapshot windows in a row
  partitions_per_worker = 2,      -- refine while a step has fewer partitions per worker
  coarse_jump = grain.optional("number", 100),  -- first step below that: refine at once to
                                  -- this many per worker (false: wait for the counters)
  -- How far one move goes.
  max_factor = 64,                -- largest step (multiplicative)
  min_factor = 2,                 -- smaller steps are not worth a re-partition: hold
  gain = grain.optional("number"),  -- keep going while a move made steps this much faster
                                  -- (e.g. 1.5; off by default: see docs/policies.md) ...
  probe = 2,                      -- ... by this factor at most
  -- The step times that check the moves.
  warmup = 2,                     -- steps at a new grain before it is measured at all
  skip = 1,                       -- events skipped after a change when nx_field is absent
  min_steps = 4,                  -- steps at a grain (after `warmup`) before its time counts
  slowdown = 1.5,                 -- undo a move whose steps are this much slower than the best
  -- Settling, and re-opening once settled.
  settle_ratio = 1.5,             -- bracket hi/lo below this: settled
  settle_after = 3,               -- steps in a row without a move: settled
  patience = 4,                   -- settled: steps a condition must persist to re-open ...
  reopen_slowdown = 1.5,          -- ... with steps this much slower than when it settled
  reopen_factor = 4,              -- step cap after re-opening (then its root, ...)
  max_reopen = 3,                 -- re-openings at most
}

local function fmt_time(ns)
  if ns >= 1e6 then return string.format("%.2f ms", ns / 1e6) end
  if ns >= 1e3 then return string.format("%.1f us", ns / 1e3) end
  return string.format("%.0f ns", ns)
end

-- Differences of the monotonic counters between two readings; nil when nothing completed.
local function window_metrics(a, b)
  local dn = b.n - a.n
  local dfunc, dexec, didle = b.func - a.func, b.exec - a.exec, math.max(0, b.idle - a.idle)
  if dn <= 0 or dfunc <= 0 then return nil end
  local mgmt = math.max(0, dfunc - dexec - didle)
  local dacc = (b.acc or 0) - (a.acc or 0)
  -- Preempted time out of the time outside tasks (Eq. 1p, 3p, 3mp), when the kernel says.
  local outside, preempted, kept = math.max(0, dfunc - dexec), nil, 1
  local t_m_plain = mgmt / dn
  if a.pre and b.pre then
    preempted = math.min(math.max(0, b.pre - a.pre), dfunc - 1)
    kept = outside > 0 and math.max(0, outside - preempted) / outside or 1
    mgmt, didle = mgmt * kept, didle * kept
    outside, dfunc = outside * kept, dfunc - preempted
  end
  return {
    tasks = dn,
    t_d = dexec / dn,
    t_o = outside / dn,
    t_m = mgmt / dn,
    t_m_plain = t_m_plain,
    kept = kept,   -- share of O left after taking P out
    idle_rate = outside / dfunc,
    starvation = didle / dfunc,
    preempted = preempted and preempted / (b.func - a.func) or nil,
    miss_rate = dacc > 0 and ((b.miss or 0) - (a.miss or 0)) / dacc or nil,
  }
end

function M.start(given)
  local cfg = grain.settings(M.defaults, given)
  assert(cfg.lambda > 0 and cfg.aim >= 1, "adaptive_grain: lambda > 0 and aim >= 1")
  assert(cfg.starvation_high > 0 and cfg.starvation_high < 1,
         "adaptive_grain: starvation_high must be in (0, 1)")
  assert(cfg.max_factor > 1 and cfg.min_factor > 1, "adaptive_grain: factors must be > 1")
  assert(cfg.preempted_share >= 0 and cfg.preempted_share <= 1,
         "adaptive_grain: preempted_share must be in [0, 1]")

  local knob = grain.knob(cfg.knob)
  local info = knob:info()
  assert(info.type == "int" or info.type == "double",
         "adaptive_grain: knob " .. cfg.knob .. " is " .. info.type .. ", not a number")
  local prefix = "/threads{" .. (cfg.instance or ("locality#" .. grain.locality .. "/total")) ..
                 "}/"

  -- The policy's state, visible to tests and other policies as M.state.
  local st = {
    phase = "searching",   -- searching | settled
    lo = nil, hi = nil,    -- grains judged too fine / too coarse (the bracket)
    cap = cfg.max_factor,  -- largest factor of the next move
    last_dir = 0,          -- +1 coarsened, -1 refined
    last_from = nil,       -- grain before the last move
    last_factor = nil,
    pending = nil,         -- a grain set but not yet reported by the application
    quiet = 0,             -- steps in a row without a move
    persist = 0, persist_dir = 0,  -- settled: a condition seen this many steps in a row
    reopened = 0,
    skip = 0,
    moves = 0,
    obs = {},              -- grain -> { t_d, t_m } of its latest window
    prev_grain = nil,      -- the grain observed before the current one (for the fit)
    steps = {},            -- grain -> { n, recent = last 4 } step durations after warm-up
    why = nil,             -- why it settled
    settled_ns = nil,      -- mean step time when it settled
    last = nil,            -- metrics of the latest window
  }
  M.state = st
  local base = nil         -- counter reading at the start of the window
  local base_at_step = false  -- ... taken at the end of a step
  local last_seq, seq_at_base = -1, -1
  local warned = false
  local last_ran = nil     -- grain of the previous step event

  local function read()
    local r = {}
    r.func = grain.counter(prefix .. "time/overall")
    r.exec = grain.counter(prefix .. "time/cumulative")
    r.idle = grain.counter(prefix .. "time/idle")
    r.n = grain.counter(prefix .. "count/cumulative")
    r.acc = grain.counter(prefix .. "count/pending-accesses")
    r.miss = grain.counter(prefix .. "count/pending-misses")
    r.pre = grain.counter(prefix .. "time/preempted")   -- nil where the kernel does not say
    if not (r.func and r.exec and r.idle and r.n) then return nil end
    return r
  end

  -- Mean of the last (up to) 4 step times at grain x, and how many steps were seen.
  local function mean_step(x)
    local s = st.steps[x]
    if not s or s.n == 0 then return nil, 0 end
    local sum, k = 0, math.min(#s.recent, 4)
    for i = #s.recent - k + 1, #s.recent do sum = sum + s.recent[i] end
    return sum / k, s.n
  end

  local function best_grain()
    local bx, bt = nil, nil
    for x, s in pairs(st.steps) do
      local t, n = mean_step(x)
      if n >= cfg.min_steps and (not bt or t < bt) then bx, bt = x, t end
    end
    return bx, bt
  end

  local function settle(why)
    if st.phase ~= "settled" then
      st.phase, st.why = "settled", why
      st.settled_ns = mean_step(knob:get())
      grain.log.info(string.format("adaptive_grain: settled at %s = %s: %s", cfg.knob,
                                   tostring(knob:get()), why))
    end
  end

  local function set(x, v, why)
    local nv = knob:set(v, why)
    if nv == x then return false end
    st.pending, st.quiet, st.moves = nv, 0, st.moves + 1
    st.skip, st.warm = cfg.skip + cfg.warmup - 1, 0
    base = nil
    return true
  end

  -- Move the knob from x by `factor` in direction dir (+1 coarser, -1 finer).
  local function move(x, dir, factor, why)
    if (dir > 0 and x >= info.max) or (dir < 0 and x <= info.min) then
      -- Already at the end of the range: a set would only record another clamp.
      settle(string.format("%s is at its limit %s (%s)", cfg.knob, tostring(x), why))
      return
    end
    if st.last_dir ~= 0 and dir ~= st.last_dir then
      st.cap = math.max(1, math.sqrt(st.cap))   -- changed direction: smaller steps from now
    end
    -- A move the cap cut short has not reached its target: the next window judges without
    -- hysteresis, so that it does not stop in the band just short of the target.
    local short = factor > st.cap
    factor = math.min(factor, st.cap)
    if factor < cfg.min_factor then
      settle(string.format("next step x%.2f is below min_factor %.2f (%s)", factor,
                           cfg.min_factor, why))
      return
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
      return
    end
    local from = x
    local ratio = target / x >= 1 and target / x or x / target
    if set(x, target, string.format("%s x%.1f", why, ratio)) then
      st.last_dir, st.last_from, st.last_factor = dir, from, factor
      st.short = short
    else
      settle(string.format("%s is at its limit %s (%s)", cfg.knob, tostring(x), why))
    end
  end

  -- t_d = a * grain + b from this grain's window and the previous grain's.
  -- With one grain only, `prior` is the share of t_d taken as fixed (b = prior * t_d); the
  -- third result says whether the two were fitted.
  local function fit(x, m, prior)
    local y = st.prev_grain
    local oy = y and st.obs[y]
    if oy and y ~= x then
      local a = (m.t_d - oy.t_d) / (x - y)
      local b = m.t_d - a * x
      if a > 0 and b >= 0 then return a, b, true end
    end
    return (1 - prior) * m.t_d / x, prior * m.t_d, false
  end

  -- The counters' verdict on the window that just ended at grain x: dir, factor, why.
  local function judge(x, m, full_step)
    local detail = string.format(
        "t_d %s, t_m %s, t_o %s, idle-rate %.2f, starvation %.0f%%%s%s", fmt_time(m.t_d),
        fmt_time(m.t_m), fmt_time(m.t_o), m.idle_rate, 100 * m.starvation,
        m.preempted and string.format(", preempted %.0f%% (left out)", 100 * m.preempted) or "",
        m.miss_rate and string.format(", pending misses %.0f%%", 100 * m.miss_rate) or "")
    -- t_m as measured over many tasks: windows of a few long tasks inflate it (wake-ups, the
    -- producer's work land on few tasks), which would make the target far too coarse.
    -- Without such a window yet, t_m does not count (a few long tasks are no overhead problem).
    -- Preempted time taken out (Eq. 3mp) where the window can tell it from management; the
    -- plain t_m only while no window could.
    if m.tasks >= cfg.min_tasks then
      if m.kept >= 1 - cfg.preempted_share then
        st.tm_min = math.min(st.tm_min or m.t_m, m.t_m)
      end
      st.tm_plain = math.min(st.tm_plain or m.t_m_plain, m.t_m_plain)
    end
    local t_m = st.tm_min or st.tm_plain or 0
    local floor = math.max(cfg.lambda * t_m, cfg.min_task_ns)
    -- Fewer partitions than workers can use: starved by construction (the coarse end of
    -- Grubel et al. 2015), whatever one window's idle time says, and never a reason to
    -- coarsen: a t_m inflated by a loaded machine (a preempted worker's time counts as
    -- management) must not turn it round.
    local workers = st.workers or grain.counter(prefix .. "count/active-workers")
    local few = st.parts and workers and st.parts < cfg.partitions_per_worker * workers
    -- Coarsen only well below the bound (`hysteresis`), aim well above it (`aim`): a grain
    -- near the bound is in the flat region already, and a re-partition costs several steps.
    local hysteresis = st.short and 1 or cfg.hysteresis
    if not few and m.t_d * hysteresis < floor then
      -- The first move, from a single grain, assumes that `fixed_share` of t_d will not grow
      -- with it: short tasks are mostly per-task cost, and landing too coarse by a small
      -- factor costs far less than a second re-partition. The second grain gives the fit.
      -- Only the first move guesses; later, a fit that fails (noise: t_d did not grow with
      -- the grain) falls back to b = 0, the cautious side.
      local a, b, fitted = fit(x, m, st.moves == 0 and cfg.fixed_share or 0)
      local factor = math.max(cfg.min_factor, (cfg.aim * floor - b) / a / x)
      local rule = m.t_d * hysteresis < cfg.lambda * t_m
                   and string.format("t_d < %g t_m", cfg.lambda / hysteresis)
                   or string.format("t_d < %s", fmt_time(cfg.min_task_ns / hysteresis))
      if st.short then rule = rule .. " (the last move was capped short of its target)" end
      return 1, factor, string.format("%s: coarsen (%s t_d = %.3g ns * %s + %s; %s)", rule,
                                      fitted and "fit" or "guess", a, cfg.knob, fmt_time(b),
                                      detail), detail
    end
    local a, b = fit(x, m, 0)
    st.starved = m.starvation > cfg.starvation_high and (st.starved or 0) + 1 or 0
    if st.starved >= (full_step and 1 or cfg.confirm) or few then
      -- Refine to as many partitions as still pay for their overhead, i.e. the grain where
      -- t_d = aim * floor, like coarsening aims at (one target from both sides); never
      -- finer: a serial producer, or the re-partitioning itself, starves workers at fine
      -- grain too.
      -- (When the fixed part b alone reaches the target, no finer grain pays: no move.)
      local target = (cfg.aim * floor - b) / a
      local factor = target > 0 and x / math.max(1, target) or 0
      -- Too few partitions: at least enough of them, whatever the overhead estimate says.
      if few then factor = math.max(factor, cfg.partitions_per_worker * workers / st.parts) end
      if factor >= cfg.min_factor then
        local cause = few and string.format("%d partitions for %d workers", st.parts, workers)
                      or string.format("starvation %.0f%% > %.0f%%", 100 * m.starvation,
                                       100 * cfg.starvation_high)
        return -1, factor, string.format("%s: refine (%s)", cause, detail), detail
      end
    end
    return 0, 1, nil, detail
  end

  -- A counter window at grain x ended: record it and, while searching, follow the verdict.
  local function on_counters(x, m, full_step)
    st.last = m
    if st.last_grain ~= nil and st.last_grain ~= x then st.prev_grain = st.last_grain end
    st.last_grain = x
    st.obs[x] = { t_d = m.t_d, t_m = m.t_m }
    local dir, factor, why, detail = judge(x, m, full_step)
    -- clean: nothing to say against this grain (not merely an unconfirmed starvation).
    st.verdict = { grain = x, dir = dir, factor = factor, why = why, detail = detail,
                   clean = dir == 0 and m.starvation <= cfg.starvation_high }
    -- The first move needs no clock (the sooner the better: the application may not have
    -- submitted its second step yet); later ones wait until this grain's step time is known,
    -- so that the time rules can judge them (on_step).
    local _, n_x = mean_step(x)
    if st.phase == "searching" and dir ~= 0 and (st.moves == 0 or n_x >= cfg.min_steps) then
      move(x, dir, factor, why)
    end
  end

  -- A step at grain x ended (and no change is on its way): the time rules.
  local function on_step(x)
    local v = st.verdict
    if not v or v.grain ~= x then return end
    local t_x, n_x = mean_step(x)
    if n_x < cfg.min_steps then t_x = nil end

    if st.phase == "settled" then
      -- Only a condition that comes with slower steps than when it settled counts: the
      -- counters may have said the same then (the time rules overruled them).
      local dir = v.dir
      if dir ~= 0 and t_x and st.settled_ns and t_x <= cfg.reopen_slowdown * st.settled_ns then
        dir = 0
      end
      if dir ~= 0 and dir == st.persist_dir then
        st.persist = st.persist + 1
      else
        st.persist, st.persist_dir = dir ~= 0 and 1 or 0, dir
      end
      if dir == 0 or st.persist < cfg.patience or st.reopened >= cfg.max_reopen then return end
      -- The conditions changed for good (another input phase, other load): search again.
      st.reopened = st.reopened + 1
      st.phase, st.why = "searching", nil
      st.cap = cfg.reopen_factor ^ (0.5 ^ (st.reopened - 1))
      st.lo, st.hi, st.last_dir = nil, nil, 0
      st.steps = { [x] = st.steps[x] }
      st.persist, st.persist_dir = 0, 0
      move(x, dir, v.factor, v.why .. string.format(
          " (for %d steps while settled, steps slower: re-opened)", cfg.patience))
      return
    end

    -- The clock first: a move that made steps slower than the best grain is undone.
    local bx, bt = best_grain()
    if bx and bx ~= x and t_x and t_x > cfg.slowdown * bt then
      if bx > x then st.lo = math.max(st.lo or x, x) else st.hi = math.min(st.hi or x, x) end
      st.cap = math.max(1, math.sqrt(st.cap))
      st.last_dir = bx > x and 1 or -1
      st.last_from, st.last_factor = nil, nil
      set(x, bx, string.format("steps at %s = %s take %s, %.2fx the %s at %s: back (%s)",
                               cfg.knob, tostring(x), fmt_time(t_x), t_x / bt, fmt_time(bt),
                               tostring(bx), v.detail))
      return
    end

    if v.dir ~= 0 and t_x then          -- the counters' verdict, now that the clock can judge it
      move(x, v.dir, v.factor, v.why)
      if st.pending or st.phase == "settled" then return end
    end

    if cfg.gain and st.last_from and t_x then
      -- The counters are content; did the last move pay? Then one more, smaller step.
      local t_from = mean_step(st.last_from)
      -- A small step (at most `probe`): after a large jump the region is already close.
      local from, dir = st.last_from, st.last_dir
      local factor = math.min(cfg.probe, math.sqrt(st.last_factor))
      st.last_from = nil   -- judged once
      if t_from and t_x * cfg.gain < t_from then
        move(x, dir, factor, string.format(
            "the last move (%s -> %s) made steps %.2fx faster (%s -> %s): %s again (%s)",
            tostring(from), tostring(x), t_from / t_x, fmt_time(t_from), fmt_time(t_x),
            dir > 0 and "coarsen" or "refine", v.detail))
        if st.pending then return end
      end
    end

    st.quiet = v.clean and st.quiet + 1 or 0
    if st.quiet >= cfg.settle_after and t_x then
      settle(string.format("%d steps in the efficient region (%s)", st.quiet, v.detail))
    end
  end

  -- from_step: called at the end of a step (else on a snapshot).
  -- A first step with fewer partitions than the workers can use is too coarse by
  -- construction and needs no counters to say so. Counter windows of a few tasks each would
  -- take several steps to judge it, and every step that runs before the decision arrives is
  -- a whole coarse step; so refine at once to `coarse_jump` partitions per worker, and let
  -- the counter rules fine-tune from there. True when the step was judged so (moved or not).
  local function coarse_jump(x, parts)
    if not (cfg.coarse_jump and st.moves == 0 and st.phase == "searching") then return false end
    local workers = st.workers or grain.counter(prefix .. "count/active-workers")
    if not (workers and parts < cfg.partitions_per_worker * workers) then return false end
    -- Not move(): its step cap is for searching, and this step has a known size.
    local target = math.max(info.min, x * parts / (cfg.coarse_jump * workers))
    if info.type == "int" then target = math.floor(target + 0.5) end
    if target < x and set(x, target, string.format(
          "%d partitions for %d workers: refine to %d per worker (first step) x%.1f",
          parts, workers, cfg.coarse_jump, x / target)) then
      st.hi, st.last_dir, st.last_from, st.last_factor = x, -1, x, x / target
    end
    return true
  end

  local function close_window(x, min_tasks, from_step)
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
      base, seq_at_base, base_at_step = now, last_seq, from_step
      return
    end
    if last_seq == seq_at_base then return end   -- no new snapshot: let the window grow
    if now.n - base.n < min_tasks then return end
    local m = window_metrics(base, now)
    local full_step = from_step and base_at_step
    base, seq_at_base, base_at_step = now, last_seq, from_step
    if m then on_counters(x, m, full_step) end
  end

  grain.on("start", function(p) st.workers = p.workers end, cfg.name)
  grain.on("sample", function(s)
    last_seq = s.sequence
    if st.pending == nil and st.phase == "searching" then
      close_window(knob:get(), cfg.min_tasks, false)
    end
  end, cfg.name)

  if cfg.start_trigger then
    grain.on(cfg.start_trigger, function(ev)
      local x = knob:get()
      local planned = cfg.nx_field and ev[cfg.nx_field] or x
      local parts = cfg.parts_field and ev[cfg.parts_field] or nil
      if st.pending == nil and planned == x and parts then coarse_jump(x, parts) end
    end, cfg.name)
  end

  if not cfg.trigger then return end
  return grain.on(cfg.trigger, function(ev)
    local x = knob:get()
    local ran = cfg.nx_field and ev[cfg.nx_field] or nil
    if st.pending ~= nil then
      -- After a change: wait until the application reports a step with the new grain.
      local arrived
      if ran ~= nil then
        if ran == st.pending then st.warm = (st.warm or 0) + 1 end
        arrived = (st.warm or 0) >= cfg.warmup
      else
        st.skip = st.skip - 1
        arrived = st.skip <= 0
      end
      -- The window starts with the first snapshot taken after this event: the latest one may
      -- be older than the step and hold tasks of the old grain.
      base = nil
      if arrived then st.pending = nil end
      last_ran = ran or x
      return
    end
    if ran ~= nil and ran ~= x then   -- set by someone else, not yet applied
      last_ran, base = ran, nil
      return
    end
    if cfg.parts_field and ev[cfg.parts_field] then st.parts = ev[cfg.parts_field] end
    if st.parts and coarse_jump(x, st.parts) then
      last_ran = x
      return
    end
    -- Step times at x, after the first step at x (which also re-partitioned).
    local d = cfg.duration_field and ev[cfg.duration_field] or nil
    if d and last_ran == x then
      local s = st.steps[x] or { n = 0, recent = {} }
      s.n = s.n + 1
      s.recent[#s.recent + 1] = d
      if #s.recent > 4 then table.remove(s.recent, 1) end
      st.steps[x] = s
    end
    last_ran = x
    -- A window that spans a whole step (its base was taken at the previous step's end)
    -- needs no confirmation of starvation: it is not a snapshot of a step's tail.
    close_window(x, 1, true)
    if st.pending == nil then on_step(x) end
  end, cfg.name)
end

if ... == nil then   -- loaded with --grain:policy (not through require)
  M.start(ADAPTIVE_GRAIN)
end
return M
