#pragma once

#include <QMainWindow>

namespace sy::ui {

class DashboardWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit DashboardWindow(QWidget *parent = nullptr);
};

} // namespace sy::ui
