#pragma once

#include "data/PoolSummary.h"

#include <QColor>
#include <QIcon>
#include <QImage>
#include <optional>

namespace sy::ui {

// Draws the tray icon: the app icon (grey when paused or stopped) with a state badge in the lower right
// corner and, when set, the tray number (0..100) across the top.
class TrayIconPainter
{
public:
    static QImage render(TrayState state, std::optional<int> number, int size);
    static QIcon icon(TrayState state, std::optional<int> number);
    // The badge's fill colour for a state.
    static QColor badgeColor(TrayState state);
    // The badge's centre in an image of `size` pixels (tests sample it).
    static QPointF badgeCenter(int size);
};

} // namespace sy::ui
