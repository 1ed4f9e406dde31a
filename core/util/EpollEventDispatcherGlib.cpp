#include <QtGlobal>

#if defined(Q_OS_LINUX) && defined(SWITCHYARD_HAVE_GLIB)

#include "util/EpollEventDispatcher_p.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

// The thread's GLib main context, iterated along with the sockets (as Qt's GLib dispatcher does): its
// descriptors join the epoll set under kGlibGeneration, its timeout bounds the wait.
namespace sy {

using namespace epolldispatch;

void EpollEventDispatcher::State::startGlib()
{
    if (glib)
        return;
    glib = g_main_context_new();
    g_main_context_push_thread_default(glib);
    g_main_context_acquire(glib);
}

void EpollEventDispatcher::State::stopGlib()
{
    if (!glib)
        return;
    for (const auto &[fd, events] : glibWatched)
        unwatchGlib(fd);
    glibWatched.clear();
    g_main_context_release(glib);
    g_main_context_pop_thread_default(glib);
    g_main_context_unref(glib);
    glib = nullptr;
}

void EpollEventDispatcher::State::unwatchGlib(int fd)
{
    // A Qt socket may own that number now (GLib closed its descriptor, a socket got the number): keep it.
    if (size_t(fd) < sockets.size() && sockets[size_t(fd)].generation != 0)
        return;
    ++controlCalls;
    epoll_ctl(epollFd, EPOLL_CTL_DEL, fd, nullptr);
}

int EpollEventDispatcher::State::prepareGlib(gint *priority, int *timeoutMs)
{
    const bool ready = g_main_context_prepare(glib, priority);
    gint glibTimeout = -1;
    int n = g_main_context_query(glib, *priority, &glibTimeout, glibFds.data(), gint(glibFds.size()));
    if (n > int(glibFds.size())) {
        glibFds.resize(size_t(n));
        n = g_main_context_query(glib, *priority, &glibTimeout, glibFds.data(), n);
    }
    // Compared in place first: nearly every pass asks for what the last one did, and a list built for the
    // comparison was an allocation per pass (one per streamed event under load).
    bool same = size_t(n) == glibWatched.size();
    for (int i = 0; same && i < n; ++i)
        same = glibWatched[size_t(i)] ==
               std::pair<int, quint32>(glibFds[size_t(i)].fd, quint32(glibFds[size_t(i)].events));
    if (!same) {
        std::vector<std::pair<int, quint32>> wanted;
        for (int i = 0; i < n; ++i)
            wanted.emplace_back(glibFds[size_t(i)].fd, quint32(glibFds[size_t(i)].events)); // G_IO_* == EPOLL*
        for (const auto &[fd, events] : glibWatched) {
            if (std::find_if(wanted.begin(), wanted.end(), [fd = fd](const auto &w) { return w.first == fd; }) ==
                wanted.end())
                unwatchGlib(fd);
        }
        for (const auto &[fd, events] : wanted) {
            epoll_event ev{};
            ev.events = events;
            ev.data.u64 = eventKey(fd, kGlibGeneration);
            ++controlCalls;
            if (epoll_ctl(epollFd, EPOLL_CTL_MOD, fd, &ev) < 0 && epoll_ctl(epollFd, EPOLL_CTL_ADD, fd, &ev) < 0)
                qWarning("EpollEventDispatcher: cannot watch GLib descriptor %d: %s", fd, strerror(errno));
        }
        glibWatched = std::move(wanted);
    }
    if (ready)
        *timeoutMs = 0;
    else if (glibTimeout >= 0)
        *timeoutMs = *timeoutMs < 0 ? glibTimeout : qMin(*timeoutMs, int(glibTimeout));
    for (int i = 0; i < n; ++i)
        glibFds[size_t(i)].revents = 0;
    return n;
}

void EpollEventDispatcher::State::noteGlibEvent(int fd, quint32 events, int count)
{
    for (int i = 0; i < count; ++i) {
        if (glibFds[size_t(i)].fd == fd)
            glibFds[size_t(i)].revents = gushort(events & (glibFds[size_t(i)].events | G_IO_ERR | G_IO_HUP));
    }
}

bool EpollEventDispatcher::State::dispatchGlib(gint priority, int count)
{
    if (!g_main_context_check(glib, priority, glibFds.data(), count))
        return false;
    g_main_context_dispatch(glib);
    return true;
}

} // namespace sy

#endif
