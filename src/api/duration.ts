// kubectl's age formatting (apimachinery duration.HumanDuration), used by Table AGE columns:
// "5s", "3m20s", "2d3h", "400d", "3y100d" — precision shrinks as the age grows.

/** Human-readable duration of `ms` milliseconds, exactly as HumanDuration. */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.floor(seconds / 3600);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.floor(hours / 24) % 365;
    return dy === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${dy}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

/** Age of an RFC 3339 timestamp at `now` (ms), "<unknown>" when absent, as kubectl's translateTimestampSince. */
export function ageSince(timestamp: unknown, now: number): string {
  if (typeof timestamp !== "string" || timestamp === "") return "<unknown>";
  const then = Date.parse(timestamp);
  if (Number.isNaN(then)) return "<unknown>";
  return humanDuration(now - then);
}
