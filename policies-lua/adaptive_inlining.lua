-- adaptive_inlining.lua — adjust inline.lambda online, from the scheduler's own counters.
--
-- Reads, as differences between two counter snapshots (locality#0/total):
--   /threads/time/overall         Σt_func: worker time in the scheduling loop, busy or idle
--   /threads/time/cumulative      Σt_exec: worker time inside tasks
--   /threads/time/idle            time spent looking for work and finding none
--   /threads/count/cumulative     n_t: tasks completed, inlined ones included
--   /threads/count/inline-tasks   of n_t, tasks run inline (launch::adaptive inlines count here)
-- From these, per window:
--   management = (ΔΣt_func - ΔΣt_exec - Δidle) / ΔΣt_func   share of worker time spent
--                managing tasks (queueing, switching, stealing): tasks too fine
--   starvation = Δidle / ΔΣt_func                           share of worker time without work:
--                too few tasks to keep every worker busy
--   spawned    = Δn_t - Δinline   tasks that went through the queues (reported in the reason)
-- Changes: inline.lambda (launch::adaptive inlines a task kind predicted to take less than
--          inline.lambda x t_o; docs/inlining.md).
-- Why:     the static default is calibrated on one machine and one kind of program. Where the
--          spawned tasks still cost a noticeable share of worker time, more of them should
--          be inlined: lambda goes up by `factor`. Where workers starve, inlining has taken
--          away the parallelism they need: lambda goes down by `factor`. Starvation wins when
--          both hold (idle cores cost more than overhead on busy ones). A condition must hold
--          for `patience` windows in a row; windows with fewer than `min_tasks` completed tasks
--          are dropped (nothing is running, or a serial phase), and lambda stays within
--          [`min`, `max`]. In between it holds: the efficient region of the curve of
--          Grubel et al. 2015.
--          Between the two, the task rate decides (`climb`): every adaptive launch counts in
--          n_t whether it was inlined or spawned, so Δn_t per second of wall time is the rate
--          at which the program's work gets done. It measures the rate over `probe_windows`
--          windows, tries lambda x factor (or / factor), keeps the move when the rate rose by
--          more than `gain`, goes back and tries the other direction otherwise, and settles
--          when neither direction pays; settled, it probes again after `reprobe` windows.
--          This finds what the counters cannot show directly: the costs a spawn has beyond
--          t_o in this program (a parent suspending to join, a sleeping worker woken up).
-- Papers: Grubel et al. 2015 (idle-rate, management overhead and starvation at the two ends
--          of the grain sweep), Wagle 2019 (inlining against lambda x t_o).
--
-- Settings (M.defaults below), from a global ADAPTIVE_INLINING table set by a policy loaded
-- before this one, or from require("adaptive_inlining").start{ factor = 4, ... }; e.g.
--   --grain:inline=adaptive --grain:policy=policies-lua/adaptive_inlining.lua

local M = {}

M.defaults = {
  knob = "inline.lambda",   -- the knob it moves
  overhead_high = 0.05,     -- inline more above this management share of worker time
  starvation_high = 0.10,   -- inline less above this starvation share
  factor = 2,               -- lambda moves by x or / this
  patience = 2,             -- windows in a row a condition must hold
  min = 0.25, max = 256,    -- lambda stays within [min, max]
  min_tasks = 1000,         -- windows with fewer completed tasks are dropped
  climb = true,             -- in between, climb the task rate
  probe_windows = 4,        -- windows per rate measurement
  gain = 0.10,              -- keep a move that raised the rate by more than this share
  reprobe = 50,             -- settled: windows before it probes again
}

function M.start(given)
  local cfg = grain.settings(M.defaults, given)
  local knob = grain.knob(cfg.knob)
  local overhead_high, starvation_high = cfg.overhead_high, cfg.starvation_high
  local factor, patience = cfg.factor, cfg.patience
  local min_lambda, max_lambda = cfg.min, cfg.max
  local min_tasks = cfg.min_tasks
  local climb_on = cfg.climb
  local probe_windows, gain, reprobe = cfg.probe_windows, cfg.gain, cfg.reprobe
  assert(factor > 1, "adaptive_inlining: factor must be > 1")
  assert(min_lambda < max_lambda, "adaptive_inlining: min must be below max")

  local p = "/threads{locality#" .. grain.locality .. "/total}/"
  local last = nil
  local state = { windows = 0, over_runs = 0, starve_runs = 0, management = nil,
                  starvation = nil, last_action = "none",
                  climb = { phase = "measure", n = 0, tasks = 0, secs = 0, dir = 1, fails = 0,
                            since = 0, base_rate = nil, base_lambda = nil } }
  M.state = state
  local last_time = nil

  local function reset_climb()
    local c = state.climb
    c.phase, c.n, c.tasks, c.secs, c.fails = "measure", 0, 0, 0, 0
  end

  local function clamp(v) return math.max(min_lambda, math.min(max_lambda, v)) end

  -- One window of the task-rate climb (see the header).
  local function climb(dtasks, dt, lambda)
    local c = state.climb
    if c.phase == "settled" then
      c.since = c.since + 1
      if c.since < reprobe then return end
      reset_climb()
    end
    c.n, c.tasks, c.secs = c.n + 1, c.tasks + dtasks, c.secs + dt
    if c.n < probe_windows then return end
    local rate = c.tasks / c.secs
    c.n, c.tasks, c.secs = 0, 0, 0
    local function probe(why)
      local new = clamp(lambda * factor ^ c.dir)
      if new == lambda then                        -- at a bound: the other way
        c.dir = -c.dir
        new = clamp(lambda * factor ^ c.dir)
      end
      c.base_rate, c.base_lambda, c.phase = rate, lambda, "probe"
      knob:set(new, string.format("%s; task rate %.3g/s at %g, trying %g", why, rate, lambda, new))
      state.last_action = "probe"
    end
    if c.phase == "measure" then
      probe("climb")
    elseif rate > c.base_rate * (1 + gain) then      -- the move paid: keep going
      c.fails = 0
      probe(string.format("task rate +%.0f%% at %g", 100 * (rate / c.base_rate - 1), lambda))
    else                                              -- it did not: back, other direction
      c.fails = c.fails + 1
      c.dir = -c.dir
      knob:set(c.base_lambda, string.format("task rate %+.0f%% at %g: back to %g",
                                            100 * (rate / c.base_rate - 1), lambda,
                                            c.base_lambda))
      state.last_action = "back"
      if c.fails >= 2 then
        c.phase, c.since = "settled", 0
      else
        c.phase = "measure"
      end
    end
  end

  local function read()
    local v = {
      func = grain.counter(p .. "time/overall"),
      exec = grain.counter(p .. "time/cumulative"),
      idle = grain.counter(p .. "time/idle"),
      tasks = grain.counter(p .. "count/cumulative"),
      inl = grain.counter(p .. "count/inline-tasks"),
    }
    if not (v.func and v.exec and v.idle and v.tasks and v.inl) then return nil end
    return v
  end

  return grain.on("sample", function(ev)
    local now = read()
    if not now then return end                           -- counters not there (yet)
    local t = ev.time
    if last == nil or now.func < last.func or now.tasks < last.tasks then
      last, last_time = now, t                           -- first window, or a reset
      return
    end
    local dt = t - last_time
    last_time = t
    local dfunc, dexec = now.func - last.func, now.exec - last.exec
    local didle, dtasks = now.idle - last.idle, now.tasks - last.tasks
    local dinl = now.inl - last.inl
    last = now
    -- A window with almost no tasks is a phase without task work (start-up, a serial part of
    -- the program, output): its idle time says nothing about inlining, so it is dropped.
    if dtasks < min_tasks or dfunc <= 0 then return end
    state.windows = state.windows + 1
    local management = math.max(0, dfunc - dexec - didle) / dfunc
    local starvation = math.max(0, didle) / dfunc
    local spawned = dtasks - dinl
    state.management, state.starvation = management, starvation

    local lambda = knob:get()
    if starvation > starvation_high then
      state.starve_runs, state.over_runs = state.starve_runs + 1, 0
    elseif management > overhead_high then
      state.over_runs, state.starve_runs = state.over_runs + 1, 0
    else
      state.over_runs, state.starve_runs = 0, 0
      state.last_action = "hold"
      if climb_on and dt > 0 then climb(dtasks, dt, lambda) end
      return
    end

    local facts = string.format(
      "management %.1f%%, starvation %.1f%% of worker time; %d of %d tasks spawned",
      100 * management, 100 * starvation, spawned, dtasks)
    if state.starve_runs >= patience and lambda > min_lambda then
      local new = math.max(min_lambda, lambda / factor)
      knob:set(new, string.format("starvation > %.0f%% for %d windows: inline less (%s)",
                                  100 * starvation_high, state.starve_runs, facts))
      state.starve_runs, state.last_action = 0, "lower"
      reset_climb()
    elseif state.over_runs >= patience and lambda < max_lambda then
      local new = math.min(max_lambda, math.max(lambda, min_lambda) * factor)
      knob:set(new, string.format("management > %.0f%% for %d windows: inline more (%s)",
                                  100 * overhead_high, state.over_runs, facts))
      state.over_runs, state.last_action = 0, "raise"
      reset_climb()
    end
  end, "adaptive_inlining")
end

if ... == nil then   -- loaded with --grain:policy (not through require)
  M.start(ADAPTIVE_INLINING)
end
return M
