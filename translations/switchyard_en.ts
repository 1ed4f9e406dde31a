<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="en_US">
<context>
    <name>QObject</name>
    <message>
        <location filename="../app/GuiMain.cpp" line="22"/>
        <location filename="../app/GuiMain.cpp" line="30"/>
        <source>Switchyard</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../app/GuiMain.cpp" line="23"/>
        <source>The configuration cannot be used:
%1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../app/GuiMain.cpp" line="35"/>
        <source>Serving on %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../app/GuiMain.cpp" line="39"/>
        <source>Open dashboard</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../app/GuiMain.cpp" line="41"/>
        <source>Quit</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../app/GuiMain.cpp" line="49"/>
        <source>Switchyard — %1</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>sy::ui::DashboardWindow</name>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="63"/>
        <source>Switchyard</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="69"/>
        <location filename="../ui/DashboardWindow.cpp" line="72"/>
        <source>Account</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="69"/>
        <source>Email</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="69"/>
        <source>Plan</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="69"/>
        <location filename="../ui/DashboardWindow.cpp" line="72"/>
        <source>Status</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="69"/>
        <source>5 h used</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="69"/>
        <source>Weekly used</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="70"/>
        <source>Last used</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="72"/>
        <source>Started</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="72"/>
        <source>Request</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="72"/>
        <source>Route</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="72"/>
        <source>ms</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="73"/>
        <source>Tokens</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="103"/>
        <source>Database not available: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/DashboardWindow.cpp" line="136"/>
        <source>%1 · %n account(s)</source>
        <translation type="unfinished">
            <numerusform></numerusform>
            <numerusform></numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="137"/>
        <source>Database problem: %1</source>
        <translation type="unfinished"></translation>
    </message>
</context>
</TS>
