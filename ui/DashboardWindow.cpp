#include "DashboardWindow.h"

namespace sy::ui {

DashboardWindow::DashboardWindow(QWidget *parent) : QMainWindow(parent)
{
    setWindowTitle(tr("Switchyard"));
}

} // namespace sy::ui
