#pragma once

#include <QHash>
#include <optional>

namespace sy {

// A cache of the most recently inserted entries in two generations: when the current one holds `generation`
// entries it becomes the previous one (the older previous generation is dropped) and a new one starts.
// Lookups see both, so the latest `generation` entries at least are always kept and never more than twice
// that. For caches in front of a durable table, where a miss costs a read, not correctness.
template<typename Key, typename Value>
class RecentMap
{
public:
    explicit RecentMap(qsizetype generation) : m_generation(generation) {}

    std::optional<Value> value(const Key &key) const
    {
        auto it = m_current.constFind(key);
        if (it != m_current.constEnd())
            return *it;
        it = m_previous.constFind(key);
        if (it != m_previous.constEnd())
            return *it;
        return std::nullopt;
    }

    void insert(const Key &key, const Value &value)
    {
        if (m_current.size() >= m_generation && !m_current.contains(key)) {
            m_previous = std::move(m_current);
            m_current = QHash<Key, Value>();
        }
        m_current.insert(key, value);
    }

    qsizetype size() const { return m_current.size() + m_previous.size(); }

private:
    qsizetype m_generation;
    QHash<Key, Value> m_current;
    QHash<Key, Value> m_previous;
};

} // namespace sy
