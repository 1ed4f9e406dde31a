<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>QObject</name>
    <message>
        <location filename="../app/GuiMain.cpp" line="22"/>
        <location filename="../app/GuiMain.cpp" line="30"/>
        <source>Switchyard</source>
        <translation>Switchyard</translation>
    </message>
    <message>
        <location filename="../app/GuiMain.cpp" line="23"/>
        <source>The configuration cannot be used:
%1</source>
        <translation>配置无法使用：
%1</translation>
    </message>
    <message>
        <location filename="../app/GuiMain.cpp" line="35"/>
        <source>Serving on %1</source>
        <translation>服务地址 %1</translation>
    </message>
    <message>
        <location filename="../app/GuiMain.cpp" line="39"/>
        <source>Open dashboard</source>
        <translation>打开仪表板</translation>
    </message>
    <message>
        <location filename="../app/GuiMain.cpp" line="41"/>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <location filename="../app/GuiMain.cpp" line="49"/>
        <source>Switchyard — %1</source>
        <translation>Switchyard — %1</translation>
    </message>
</context>
<context>
    <name>sy::ui::DashboardWindow</name>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="63"/>
        <source>Switchyard</source>
        <translation>Switchyard</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="69"/>
        <location filename="../ui/DashboardWindow.cpp" line="72"/>
        <source>Account</source>
        <translation>账户</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="69"/>
        <source>Email</source>
        <translation>邮箱</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="69"/>
        <source>Plan</source>
        <translation>套餐</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="69"/>
        <location filename="../ui/DashboardWindow.cpp" line="72"/>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="69"/>
        <source>5 h used</source>
        <translation>5 小时已用</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="69"/>
        <source>Weekly used</source>
        <translation>每周已用</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="70"/>
        <source>Last used</source>
        <translation>上次使用</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="72"/>
        <source>Started</source>
        <translation>开始时间</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="72"/>
        <source>Request</source>
        <translation>请求</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="72"/>
        <source>Route</source>
        <translation>路由</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="72"/>
        <source>ms</source>
        <translation>毫秒</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="73"/>
        <source>Tokens</source>
        <translation>令牌数</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="103"/>
        <source>Database not available: %1</source>
        <translation>数据库不可用：%1</translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/DashboardWindow.cpp" line="136"/>
        <source>%1 · %n account(s)</source>
        <translation>
            <numerusform>%1 · %n 个账户</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="137"/>
        <source>Database problem: %1</source>
        <translation>数据库问题：%1</translation>
    </message>
</context>
</TS>
