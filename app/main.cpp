#include <QCoreApplication>
#include <cstdio>

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    std::printf("switchyard %s\n", SWITCHYARD_VERSION);
    return 0;
}
