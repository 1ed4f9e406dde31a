#pragma once

#include <QHash>

namespace sy {

// A bounded lookup cache for bindings that only help (stickiness, a faster path than the database): inserts go
// to the young generation; when it holds `limit` entries it becomes the old one and the previous old one is
// dropped. So memory stays below 2 x limit entries however long the process runs, while the last `limit`
// entries are always kept (a wholesale clear() at the limit would also drop the bindings in use right now).
template <typename Key, typename Value>
class TwoGenerationCache
{
public:
    explicit TwoGenerationCache(qsizetype limit) : m_limit(qMax<qsizetype>(1, limit)) {}

    const Value *find(const Key &key) const
    {
        auto it = m_young.constFind(key);
        if (it != m_young.cend())
            return &it.value();
        it = m_old.constFind(key);
        return it != m_old.cend() ? &it.value() : nullptr;
    }
    Value value(const Key &key) const
    {
        const Value *v = find(key);
        return v ? *v : Value();
    }
    void insert(const Key &key, const Value &value)
    {
        if (!m_young.contains(key) && m_young.size() >= m_limit) {
            m_old = std::move(m_young);
            m_young = QHash<Key, Value>();
        }
        m_young.insert(key, value);
    }
    qsizetype size() const { return m_young.size() + m_old.size(); }

private:
    qsizetype m_limit;
    QHash<Key, Value> m_young;
    QHash<Key, Value> m_old;
};

} // namespace sy
