-- throttle.lua — shrink and grow a pool on its idle rate, with hysteresis.
--
-- Reads:   /threads{locality#0/pool#<pool>/total}/time/overall      sum(t_func), ns
--          /threads{locality#0/pool#<pool>/total}/time/cumulative   sum(t_exec), ns
--          (their differences give the idle rate of the last period, seed 000 Eq. 1:
--           I_r = (Δsum(t_func) - Δsum(t_exec)) / Δsum(t_func); the /idle-rate counter itself
--           averages over the whole run and would react far too slowly)
-- Changes: pool.<pool>.workers (the elastic pool size; workers above it sleep)
-- Why:     a pool whose workers mostly look for work wastes cores that other pools or other
--          processes could use, and pays for the search (seed 000: idle-rate grows with
--          starvation as tasks become too coarse or too few). Like APEX's throttling policy,
--          it removes one worker while the pool is idle above `high` and gives it back when
--          idleness falls below `low`; the band between the two and the `patience` periods
--          in a row keep it from oscillating.
-- Seed:    000 (Grubel et al., idle-rate and task-size metrics).
--
-- Configuration: globals set by a policy loaded before this one, or
--   require("throttle").start{ pool = "default", period_ms = 100, high = 0.5, low = 0.2,
--                             patience = 3, min_workers = 1 }
-- e.g.  --grain:policy=my_settings.lua --grain:policy=policies-lua/throttle.lua
-- with my_settings.lua containing:  THROTTLE = { high = 0.6, period_ms = 50 }

local M = {}

function M.start(cfg)
  cfg = cfg or {}
  local pool = cfg.pool or "default"
  local period = cfg.period_ms or 100
  local high, low = cfg.high or 0.5, cfg.low or 0.2
  local patience = cfg.patience or 3
  local min_workers = cfg.min_workers or 1
  assert(low < high, "throttle: low must be below high")

  local knob = grain.knob("pool." .. pool .. ".workers")
  local max_workers = knob:info().max
  local prefix = "/threads{locality#" .. grain.locality .. "/pool#" .. pool .. "/total}/time/"
  local last_func, last_exec
  local idle_runs, busy_runs = 0, 0

  return grain.every(period, function()
    local func = grain.counter(prefix .. "overall")
    local exec = grain.counter(prefix .. "cumulative")
    if not func or not exec then return end            -- no sample yet
    if last_func == nil or func < last_func then       -- first period, or counters reset
      last_func, last_exec = func, exec
      return
    end
    local dfunc, dexec = func - last_func, exec - last_exec
    last_func, last_exec = func, exec
    if dfunc <= 0 then return end
    local idle = (dfunc - dexec) / dfunc

    if idle > high then
      idle_runs, busy_runs = idle_runs + 1, 0
    elseif idle < low then
      busy_runs, idle_runs = busy_runs + 1, 0
    else
      idle_runs, busy_runs = 0, 0                      -- inside the band: hold
    end

    local n = knob:get()
    if idle_runs >= patience and n > min_workers then
      knob:set(n - 1, string.format("idle rate %.2f > %.2f for %d periods", idle, high, idle_runs))
      idle_runs = 0
    elseif busy_runs >= patience and n < max_workers then
      knob:set(n + 1, string.format("idle rate %.2f < %.2f for %d periods", idle, low, busy_runs))
      busy_runs = 0
    end
  end, "throttle:" .. pool)
end

if ... == nil then   -- loaded with --grain:policy (not through require)
  M.start(THROTTLE)
end
return M
