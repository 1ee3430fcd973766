// A relay's user sees the same events, errors, counters, key and presence types whatever the
// engine; they live in AsyncMailRelay, which every engine shares.
@_exported import AsyncMailRelay
