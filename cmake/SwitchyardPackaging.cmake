# Desktop integration files and the Debian package (`cpack -G DEB` in the build directory).
include(GNUInstallDirs)

set(SWITCHYARD_APP_ID io.github.switchyard.Switchyard)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/linux/${SWITCHYARD_APP_ID}.desktop
        DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/linux/${SWITCHYARD_APP_ID}.metainfo.xml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/switchyard.svg
        DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps RENAME ${SWITCHYARD_APP_ID}.svg)
# `systemctl --user enable --now switchyard` runs the headless proxy without the tray.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/linux/switchyard.service DESTINATION lib/systemd/user)

# The package is made from what is already built (`cmake --build build && cd build && cpack`): without this,
# Ninja's install step would first build every target, tests and benchmarks included.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME switchyard)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "Switchyard developers <switchyard@users.noreply.github.com>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE https://github.com/switchyard/switchyard)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "${PROJECT_DESCRIPTION}
 A tray app and a headless local HTTP proxy (switchyard serve) that spreads the requests of the Codex CLI,
 OpenCode and other OpenAI-compatible clients over several ChatGPT accounts.")
# dpkg-shlibdeps finds the linked libraries (Qt 6, QtKeychain, libsodium...); what Qt loads at run time is not
# linked, so it is named here: the SQLite driver the store opens, the SVG icon engine/image plugin for the tray
# icon, the xcb platform plugin, and libsecret which QtKeychain dlopens for the Secret Service.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libqt6sql6-sqlite, libqt6svg6, qt6-qpa-plugins, libsecret-1-0")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "gnome-keyring")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libqt6sql6-psql")
include(CPack)
