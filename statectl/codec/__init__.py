"""bytes -> inert Python values: msgpack, JSON, the inert unpickler, the storage layouts."""
