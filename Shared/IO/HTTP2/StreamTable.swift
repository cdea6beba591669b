/// A map from HTTP/2 stream ID to per-stream state, for the lookups done on every frame.
///
/// Stream IDs are positive and handed out in increasing order (odd by clients, even by servers), so the live ones
/// sit in a narrow window: open addressing on `id / 2` spreads them over consecutive slots with no hashing, where
/// `Dictionary` would run SipHash for each lookup. Linear probing; removal shifts the following run back instead
/// of leaving tombstones, so a long-lived connection never degrades.
public struct StreamTable<Value> {
    @usableFromInline var keys: [Int32]
    @usableFromInline var slots: [Value?]
    @usableFromInline var mask: Int
    @usableFromInline var used = 0
    /// The furthest any entry has been placed from its home slot since the slots were last rebuilt.
    @usableFromInline var maxDisplacement = 0
    /// The number of streams in the table.
    @inlinable public var count: Int { used }

    /// An empty table.
    @inlinable public init() {
        keys = Array(repeating: 0, count: 16)
        slots = Array(repeating: nil, count: 16)
        mask = 15
    }

    /// True when no stream is in the table.
    @inlinable public var isEmpty: Bool { count == 0 }

    @inlinable @inline(__always)
    func home(_ id: Int32) -> Int { Int(UInt32(bitPattern: id) >> 1) & mask }

    @inlinable func find(_ id: Int32) -> Int? {
        var index = home(id)
        // No entry sits further than `maxDisplacement` past its home slot, so the search can stop there instead of
        // walking the whole run (live IDs are consecutive, so the run is often every open stream).
        for _ in 0...maxDisplacement {
            let key = keys[index]
            if key == id { return index }
            if key == 0 { return nil }
            index = (index + 1) & mask
        }
        return nil
    }

    /// The state of stream `id`; setting nil removes it. `id` must be positive.
    @inlinable public subscript(id: Int32) -> Value? {
        get {
            guard let index = find(id) else { return nil }
            return slots[index]
        }
        set {
            if let newValue {
                insert(newValue, for: id)
            } else {
                removeValue(forKey: id)
            }
        }
    }

    @inlinable mutating func insert(_ value: Value, for id: Int32) {
        precondition(id > 0, "stream IDs are positive")
        if let index = find(id) {
            slots[index] = value
            return
        }
        if (count + 1) * 2 > keys.count { grow() }
        let start = home(id)
        var index = start
        while keys[index] != 0 { index = (index + 1) & mask }
        maxDisplacement = max(maxDisplacement, (index - start) & mask)
        keys[index] = id
        slots[index] = value
        used += 1
    }

    /// Removes stream `id` and returns its state.
    @inlinable @discardableResult
    public mutating func removeValue(forKey id: Int32) -> Value? {
        guard var hole = find(id) else { return nil }
        let removed = slots[hole]
        keys[hole] = 0
        slots[hole] = nil
        used -= 1
        // Move back any entry of the run after the hole whose home slot is not between the hole and itself. Only
        // entries within `maxDisplacement` of the hole can have their home at or before it.
        var index = (hole + 1) & mask
        while keys[index] != 0 && (index - hole) & mask <= maxDisplacement {
            let wanted = home(keys[index])
            let mustMove = hole <= index ? (wanted <= hole || wanted > index) : (wanted <= hole && wanted > index)
            if mustMove {
                keys[hole] = keys[index]
                slots[hole] = slots[index]
                keys[index] = 0
                slots[index] = nil
                hole = index
            }
            index = (index + 1) & mask
        }
        return removed
    }

    /// Removes every stream.
    @inlinable public mutating func removeAll() {
        guard count > 0 else { return }
        for index in keys.indices where keys[index] != 0 {
            keys[index] = 0
            slots[index] = nil
        }
        used = 0
    }

    /// The states of every stream, in no particular order.
    @inlinable public var values: [Value] {
        var result: [Value] = []
        result.reserveCapacity(count)
        for index in keys.indices where keys[index] != 0 { result.append(slots[index]!) }
        return result
    }

    @inlinable mutating func grow() {
        let oldKeys = keys
        let oldSlots = slots
        keys = Array(repeating: 0, count: oldKeys.count * 2)
        slots = Array(repeating: nil, count: oldKeys.count * 2)
        mask = keys.count - 1
        used = 0
        maxDisplacement = 0
        for index in oldKeys.indices where oldKeys[index] != 0 { insert(oldSlots[index]!, for: oldKeys[index]) }
    }
}
