-- throttle.lua — shrink and grow a pool on its idle rate, with hysteresis.
--
-- Reads:   /threads{locality#R/pool#<pool>/total}/time/overall      sum(t_func), ns
--          /threads{locality#R/pool#<pool>/total}/time/cumulative   sum(t_exec), ns
--          /threads{locality#R/pool#<pool>/total}/time/preempted    P, ns waiting for a CPU
--          /threads{locality#R/pool#<pool>/total}/time/idle         ns looking for work
--          (their differences give the idle rate of the last period, docs/counters.md Eq. 1p:
--           (ΔΣt_func - ΔΣt_exec - ΔP) / (ΔΣt_func - ΔP), Grubel et al. 2015's Eq. 1 where the
--           kernel gives no P: a worker kept off its CPU by another process is not idle; the
--           /idle-rate counters average since the last reset and would react far too slowly.
--           Σt_exec grows only when a task ends, so a task that runs for the whole period —
--           a tree search whose children run inline — looks idle by Eq. 1p; the time the
--           workers spent looking for work, max(0, Δidle - ΔP) / (ΔΣt_func - ΔP), does not,
--           and the rule reads the smaller of the two)
-- Changes: pool.<pool>.workers (the elastic pool size; workers above it sleep)
-- Why:     a pool whose workers mostly look for work wastes cores that other pools or other
--          processes could use, and pays for the search (Grubel et al. 2015: the idle rate
--          grows with starvation as tasks become too coarse or too few). Like APEX's
--          throttling policy, it removes one worker while the pool is idle above `high` and
--          gives it back when idleness falls below `low`; the band between the two and the
--          `patience` periods in a row keep it from oscillating. A period in which no task
--          ended does not count towards removing one: the pool was unused (its workers
--          sleep, nothing to free) or one task ran through it.
--
-- Settings (M.defaults below), from a global THROTTLE table set by a policy loaded before
-- this one, or from require("throttle").start{ high = 0.6, ... }; e.g.
--   --grain:policy=my_settings.lua --grain:policy=policies-lua/throttle.lua
-- with my_settings.lua containing:  THROTTLE = { high = 0.6, period_ms = 50 }

local M = {}

M.defaults = {
  pool = "default",   -- the pool whose workers it moves
  period_ms = 100,    -- how often it looks
  high = 0.5,         -- one worker less while the idle rate is above this ...
  low = 0.2,          -- ... one more while it is below this
  patience = 3,       -- periods in a row a condition must hold
  min_workers = 1,    -- never fewer workers
}

function M.start(given)
  local cfg = grain.settings(M.defaults, given)
  assert(cfg.low < cfg.high, "throttle: low must be below high")

  local knob = grain.knob("pool." .. cfg.pool .. ".workers")
  local max_workers = knob:info().max
  local prefix = "/threads{locality#" .. grain.locality .. "/pool#" .. cfg.pool .. "/total}/time/"
  local last_func, last_exec, last_pre, last_idle
  local idle_runs, busy_runs = 0, 0

  return grain.every(cfg.period_ms, function()
    local func = grain.counter(prefix .. "overall")
    local exec = grain.counter(prefix .. "cumulative")
    local pre = grain.counter(prefix .. "preempted")   -- nil where the kernel does not say
    local searching = grain.counter(prefix .. "idle")
    if not func or not exec then return end            -- no sample yet
    if last_func == nil or func < last_func then       -- first period, or counters reset
      last_func, last_exec, last_pre, last_idle = func, exec, pre, searching
      return
    end
    local dfunc, dexec = func - last_func, exec - last_exec
    local dpre = (pre and last_pre) and math.min(math.max(0, pre - last_pre), dfunc) or 0
    local didle = (searching and last_idle) and math.max(0, searching - last_idle) or nil
    last_func, last_exec, last_pre, last_idle = func, exec, pre, searching
    if dfunc - dpre <= 0 then return end
    local idle = math.max(0, dfunc - dexec - dpre) / (dfunc - dpre)
    if didle then idle = math.min(idle, math.max(0, didle - dpre) / (dfunc - dpre)) end

    if idle > cfg.high and dexec == 0 then
      -- No task ended: the pool was not used at all (the program ran serial code outside
      -- tasks), and its idle workers sleep, so a smaller pool would free nothing; it would
      -- only start the next parallel phase short of workers (grain-uts-splitmix's set-up:
      -- 300 ms, then the search ran on one worker until three periods brought the other
      -- back). (A task that runs through the whole period also ends none; neither case is a
      -- reason to shrink.)
      idle_runs, busy_runs = 0, 0
    elseif idle > cfg.high then
      idle_runs, busy_runs = idle_runs + 1, 0
    elseif idle < cfg.low then
      busy_runs, idle_runs = busy_runs + 1, 0
    else
      idle_runs, busy_runs = 0, 0                      -- inside the band: hold
    end

    local n = knob:get()
    if idle_runs >= cfg.patience and n > cfg.min_workers then
      knob:set(n - 1, string.format("idle rate %.2f > %.2f for %d periods", idle, cfg.high,
                                    idle_runs))
      idle_runs = 0
    elseif busy_runs >= cfg.patience and n < max_workers then
      knob:set(n + 1, string.format("idle rate %.2f < %.2f for %d periods", idle, cfg.low,
                                    busy_runs))
      busy_runs = 0
    end
  end, "throttle:" .. cfg.pool)
end

if ... == nil then   -- loaded with --grain:policy (not through require)
  M.start(THROTTLE)
end
return M
