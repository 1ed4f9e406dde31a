<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>Format</name>
    <message>
        <location filename="../ui/Format.cpp" line="18"/>
        <source>%1 s</source>
        <translation>%1 秒</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="21"/>
        <source>%1 min</source>
        <translation>%1 分钟</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="24"/>
        <source>%1 h %2 min</source>
        <translation>%1 小时 %2 分钟</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="25"/>
        <source>%1 d %2 h</source>
        <translation>%1 天 %2 小时</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="33"/>
        <source>now</source>
        <translation>现在</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="34"/>
        <source>in %1</source>
        <translation>%1后</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="56"/>
        <source>Active</source>
        <translation>正常</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="58"/>
        <source>Rate limited</source>
        <translation>已限速</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="60"/>
        <source>Quota exceeded</source>
        <translation>额度已用完</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="62"/>
        <source>Paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="64"/>
        <source>Needs login</source>
        <translation>需要重新登录</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="66"/>
        <source>Deactivated</source>
        <translation>已停用</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="73"/>
        <source>Preparing</source>
        <translation>准备中</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="75"/>
        <source>Routing</source>
        <translation>选择账户</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="77"/>
        <source>Queued</source>
        <translation>排队中</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="79"/>
        <source>Connecting</source>
        <translation>连接中</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="81"/>
        <source>Waiting for response</source>
        <translation>等待响应</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="83"/>
        <source>Streaming</source>
        <translation>流式传输中</translation>
    </message>
    <message>
        <location filename="../ui/Format.cpp" line="85"/>
        <source>Settling</source>
        <translation>结算中</translation>
    </message>
</context>
<context>
    <name>NoticeDiff</name>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="16"/>
        <source>All accounts are limited</source>
        <translation>所有账户均已受限</translation>
    </message>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="17"/>
        <source>No account can take requests until the earliest reset at %1 (%2).</source>
        <translation>在最早的重置时间 %1（%2）之前，没有账户可以处理请求。</translation>
    </message>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="19"/>
        <source>No account can take requests until a limit resets.</source>
        <translation>在限额重置之前，没有账户可以处理请求。</translation>
    </message>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="28"/>
        <source>%1 needs a new login</source>
        <translation>%1 需要重新登录</translation>
    </message>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="29"/>
        <source>Its tokens no longer work. Use &quot;Add account…&quot; to log in again.</source>
        <translation>它的令牌已失效。请使用“添加账户…”重新登录。</translation>
    </message>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="36"/>
        <source>%1 hit its limit</source>
        <translation>%1 已达到限额</translation>
    </message>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="37"/>
        <source>New requests go to the other accounts until it resets at %1.</source>
        <translation>在它于 %1 重置之前，新请求将发往其他账户。</translation>
    </message>
    <message>
        <location filename="../ui/tray/NoticeDiff.cpp" line="38"/>
        <source>New requests go to the other accounts.</source>
        <translation>新请求将发往其他账户。</translation>
    </message>
</context>
<context>
    <name>QObject</name>
    <message>
        <location filename="../app/GuiMain.cpp" line="66"/>
        <location filename="../app/GuiMain.cpp" line="85"/>
        <source>Switchyard</source>
        <translation>Switchyard</translation>
    </message>
    <message>
        <location filename="../app/GuiMain.cpp" line="67"/>
        <source>The configuration cannot be used:
%1</source>
        <translation>配置无法使用：
%1</translation>
    </message>
</context>
<context>
    <name>sy::ui::AccountOnboarding</name>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="21"/>
        <source>Account added</source>
        <translation>账户已添加</translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="21"/>
        <source>Login failed</source>
        <translation>登录失败</translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="21"/>
        <source>Logged in: %1</source>
        <translation>已登录：%1</translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="49"/>
        <source>Add account</source>
        <translation>添加账户</translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="50"/>
        <source>Finish the login in the browser window that just opened.</source>
        <translation>请在刚刚打开的浏览器窗口中完成登录。</translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="51"/>
        <source>Open this address in a browser on this computer to log in:</source>
        <translation>请在本机的浏览器中打开以下地址进行登录：</translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="64"/>
        <source>Import auth.json</source>
        <translation>导入 auth.json</translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="66"/>
        <source>Codex auth files (*.json);;All files (*)</source>
        <translation>Codex 认证文件 (*.json);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="76"/>
        <source>Accounts imported</source>
        <translation>账户已导入</translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="76"/>
        <source>Import failed</source>
        <translation>导入失败</translation>
    </message>
    <message>
        <location filename="../ui/tray/AccountOnboarding.cpp" line="77"/>
        <source>Imported: %1</source>
        <translation>已导入：%1</translation>
    </message>
</context>
<context>
    <name>sy::ui::AccountsModel</name>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="66"/>
        <source>%1 · resets %2</source>
        <translation>%1 · %2重置</translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="102"/>
        <source>%1 (pinned)</source>
        <translation>%1（已固定）</translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="109"/>
        <source>%1 (backoff %2)</source>
        <translation>%1（退避，%2结束）</translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="132"/>
        <source>Account</source>
        <translation>账户</translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="134"/>
        <source>Email</source>
        <translation>邮箱</translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="136"/>
        <source>Plan</source>
        <translation>套餐</translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="138"/>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="140"/>
        <source>5 h used</source>
        <translation>5 小时已用</translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="142"/>
        <source>Weekly used</source>
        <translation>每周已用</translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="144"/>
        <source>Last used</source>
        <translation>上次使用</translation>
    </message>
    <message>
        <location filename="../ui/models/AccountsModel.cpp" line="146"/>
        <source>Token expires</source>
        <translation>令牌过期时间</translation>
    </message>
</context>
<context>
    <name>sy::ui::AccountsPage</name>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="23"/>
        <source>Remove account</source>
        <translation>移除账户</translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="48"/>
        <source>Pin</source>
        <translation>固定</translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="49"/>
        <source>Automatic</source>
        <translation>自动</translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="50"/>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="51"/>
        <source>Resume</source>
        <translation>恢复</translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="52"/>
        <source>Log in again…</source>
        <translation>重新登录…</translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="53"/>
        <source>Remove…</source>
        <translation>移除…</translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="55"/>
        <source>Add account…</source>
        <translation>添加账户…</translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="56"/>
        <source>Import auth.json…</source>
        <translation>导入 auth.json…</translation>
    </message>
    <message>
        <location filename="../ui/pages/AccountsPage.cpp" line="72"/>
        <source>Remove %1 and its stored tokens? Its request history stays.</source>
        <translation>移除 %1 及其保存的令牌吗？它的请求记录会保留。</translation>
    </message>
</context>
<context>
    <name>sy::ui::ApiKeysModel</name>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="66"/>
        <source>Active</source>
        <translation>有效</translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="68"/>
        <source>Expired</source>
        <translation>已过期</translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="70"/>
        <source>Revoked</source>
        <translation>已吊销</translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="92"/>
        <source>Revoked %1</source>
        <translation>吊销于 %1</translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="105"/>
        <location filename="../ui/models/ApiKeysModel.cpp" line="107"/>
        <source>Never</source>
        <translation>从不</translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="110"/>
        <source>None</source>
        <translation>无</translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="111"/>
        <source>%1 tokens per %2</source>
        <translation>每 %2 %1 个令牌</translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="115"/>
        <source>%1 (%2%)</source>
        <translation>%1（%2%）</translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="130"/>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="132"/>
        <source>Key id</source>
        <translation>密钥 ID</translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="134"/>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="136"/>
        <source>Created</source>
        <translation>创建时间</translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="138"/>
        <source>Expires</source>
        <translation>过期时间</translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="140"/>
        <source>Last used</source>
        <translation>上次使用</translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="142"/>
        <source>Token limit</source>
        <translation>令牌上限</translation>
    </message>
    <message>
        <location filename="../ui/models/ApiKeysModel.cpp" line="144"/>
        <source>Used in window</source>
        <translation>窗口内已用</translation>
    </message>
</context>
<context>
    <name>sy::ui::ApiKeysPage</name>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="55"/>
        <source>Revoke API key</source>
        <translation>吊销 API 密钥</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="80"/>
        <source>Create key…</source>
        <translation>创建密钥…</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="82"/>
        <source>Revoke…</source>
        <translation>吊销…</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="146"/>
        <source>The API keys cannot be read: %1</source>
        <translation>无法读取 API 密钥：%1</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="190"/>
        <source>Whether the proxy needs API keys is not known: it does not answer and the configuration file cannot be used (%1).</source>
        <translation>无法确定代理是否需要 API 密钥：代理没有响应，且配置文件不可用（%1）。</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="197"/>
        <source>No API key is needed: the proxy listens on %1, a loopback address that only programs on this computer can reach. Keys take effect when it listens on another address or when require_api_key is set.</source>
        <translation>无需 API 密钥：代理监听在 %1，这是只有本机程序才能访问的回环地址。当代理监听其他地址或设置了 require_api_key 时，密钥才会生效。</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="202"/>
        <source>API keys are required: the proxy listens on %1, which other computers can reach. Every proxy request needs a valid key; without one it gets 401.</source>
        <translation>需要 API 密钥：代理监听在 %1，其他计算机可以访问。每个代理请求都需要有效的密钥，否则返回 401。</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="206"/>
        <source>API keys are required: require_api_key is set, so even programs on this computer need a valid key for the proxy on %1; without one they get 401.</source>
        <translation>需要 API 密钥：已设置 require_api_key，因此即使是本机程序访问 %1 上的代理也需要有效的密钥，否则返回 401。</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="210"/>
        <source>No key is active: every proxy request is refused until you create one.</source>
        <translation>没有有效的密钥：在创建密钥之前，所有代理请求都会被拒绝。</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="213"/>
        <source>(From the configuration file %1: the proxy does not answer.)</source>
        <translation>（依据配置文件 %1：代理没有响应。）</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="249"/>
        <source>Creating the key…</source>
        <translation>正在创建密钥…</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="258"/>
        <source>Not created: %1</source>
        <translation>未创建：%1</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="261"/>
        <source>API key %1 created.</source>
        <translation>已创建 API 密钥 %1。</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="276"/>
        <source>Revoke the API key %1? Clients using it get 401 from their next request; this cannot be undone.</source>
        <translation>吊销 API 密钥 %1？使用它的客户端从下一个请求起将收到 401；此操作无法撤销。</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeysPage.cpp" line="284"/>
        <source>Not revoked: %1</source>
        <translation>未吊销：%1</translation>
    </message>
</context>
<context>
    <name>sy::ui::CreateApiKeyDialog</name>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="24"/>
        <source>Create API key</source>
        <translation>创建 API 密钥</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="29"/>
        <source>optional, e.g. laptop or ci</source>
        <translation>可选，例如 laptop 或 ci</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="30"/>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="32"/>
        <source>Expires after</source>
        <translation>有效期</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="39"/>
        <source> days</source>
        <translation> 天</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="42"/>
        <source>Token limit</source>
        <translation>令牌上限</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="47"/>
        <source>tokens</source>
        <translation>令牌数</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="51"/>
        <source>per %1</source>
        <translation>每 %1</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="57"/>
        <source>Tokens count over a sliding window, as the request log books them; a request that arrives when the window&apos;s tokens reach the limit gets 429.</source>
        <translation>令牌按滑动窗口统计（以请求日志记录为准）；窗口内令牌达到上限后到达的请求将收到 429。</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="69"/>
        <source>Create</source>
        <translation>创建</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="110"/>
        <source>Not created: %1</source>
        <translation>未创建：%1</translation>
    </message>
</context>
<context>
    <name>sy::ui::DashboardWindow</name>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="22"/>
        <source>Switchyard</source>
        <translation>Switchyard</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="32"/>
        <source>Overview</source>
        <translation>概览</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="33"/>
        <source>Accounts</source>
        <translation>账户</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="34"/>
        <source>Live</source>
        <translation>实时</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="35"/>
        <source>Usage</source>
        <translation>用量</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="36"/>
        <source>Requests</source>
        <translation>请求</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="37"/>
        <source>API keys</source>
        <translation>API 密钥</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="38"/>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="44"/>
        <source>Not done: %1</source>
        <translation>未完成：%1</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="49"/>
        <source>The proxy answers again.</source>
        <translation>代理已恢复响应。</translation>
    </message>
    <message>
        <location filename="../ui/DashboardWindow.cpp" line="49"/>
        <source>The proxy does not answer.</source>
        <translation>代理没有响应。</translation>
    </message>
</context>
<context>
    <name>sy::ui::LivePage</name>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="58"/>
        <location filename="../ui/pages/LivePage.cpp" line="91"/>
        <source>Request</source>
        <translation>请求</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="59"/>
        <source>Route</source>
        <translation>路由</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="60"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="61"/>
        <location filename="../ui/pages/LivePage.cpp" line="84"/>
        <source>Account</source>
        <translation>账户</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="62"/>
        <source>Stage</source>
        <translation>阶段</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="64"/>
        <source>Elapsed</source>
        <translation>已用时间</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="66"/>
        <source>Next deadline</source>
        <translation>下一个截止</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="67"/>
        <source>Remaining per budget</source>
        <translation>各预算剩余时间</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="69"/>
        <source>Attempts</source>
        <translation>尝试次数</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="79"/>
        <source>%1 (%2)</source>
        <translation>%1（%2）</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="86"/>
        <source>Slot</source>
        <translation>槽位</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="87"/>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="88"/>
        <source>Replica</source>
        <translation>副本</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="89"/>
        <source>Epoch</source>
        <translation>纪元</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="90"/>
        <source>Lease expires</source>
        <translation>租约到期</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="96"/>
        <source>Waiting for the proxy…</source>
        <translation>正在等待代理…</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="103"/>
        <source>In-flight turns</source>
        <translation>进行中的请求</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="108"/>
        <location filename="../ui/pages/LivePage.cpp" line="146"/>
        <source>Owner slots</source>
        <translation>所有权槽位</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="119"/>
        <source>The proxy does not answer: %1</source>
        <translation>代理没有响应：%1</translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/pages/LivePage.cpp" line="126"/>
        <source>%1 · version %2 · %n turn(s) in flight</source>
        <translation>
            <numerusform>%1 · 版本 %2 · %n 个请求进行中</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="129"/>
        <source> · draining</source>
        <translation> · 正在排空</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="147"/>
        <source>Owner slots · this replica %1 (incarnation %2)</source>
        <translation>所有权槽位 · 本副本 %1（第 %2 次启动）</translation>
    </message>
    <message>
        <location filename="../ui/pages/LivePage.cpp" line="152"/>
        <source>Owner slots: not reported by this proxy</source>
        <translation>所有权槽位：此代理未报告</translation>
    </message>
</context>
<context>
    <name>sy::ui::OverviewPage</name>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="22"/>
        <source>Capacity weighted</source>
        <translation>按容量加权</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="24"/>
        <source>Usage weighted</source>
        <translation>按用量加权</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="26"/>
        <source>Round robin</source>
        <translation>轮询</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="28"/>
        <source>Fill first</source>
        <translation>优先用满</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="48"/>
        <source>Not enough observations in the last hour</source>
        <translation>过去一小时的观测数据不足</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="49"/>
        <source>%1 % per hour</source>
        <translation>每小时 %1 %</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="51"/>
        <source>%1 · no exhaustion in sight</source>
        <translation>%1 · 暂无耗尽风险</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="54"/>
        <source>%1 · lasts until the reset %2</source>
        <translation>%1 · 可坚持到%2的重置</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="55"/>
        <source>%1 · runs out %2 (%3)</source>
        <translation>%1 · 将于%2耗尽（%3）</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="73"/>
        <source>%p% remaining</source>
        <translation>剩余 %p%</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="78"/>
        <source>5 h window (pooled)</source>
        <translation>5 小时窗口（汇总）</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="79"/>
        <source>5 h remaining</source>
        <translation>5 小时剩余</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="80"/>
        <source>5 h pace</source>
        <translation>5 小时消耗速度</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="81"/>
        <source>Weekly window (pooled)</source>
        <translation>每周窗口（汇总）</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="82"/>
        <source>Weekly remaining</source>
        <translation>每周剩余</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="83"/>
        <source>Weekly pace</source>
        <translation>每周消耗速度</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="84"/>
        <source>Requests today</source>
        <translation>今日请求</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="85"/>
        <source>Tokens today</source>
        <translation>今日令牌数</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="86"/>
        <source>Errors today</source>
        <translation>今日错误</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="87"/>
        <source>Strategy</source>
        <translation>策略</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="88"/>
        <source>Pinned account</source>
        <translation>固定账户</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="89"/>
        <source>Proxy</source>
        <translation>代理</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="94"/>
        <source>Not answering (%1)</source>
        <translation>无响应（%1）</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="113"/>
        <source>Database problem: %1</source>
        <translation>数据库问题：%1</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="129"/>
        <source>%1 (input %2, cached %3, output %4)</source>
        <translation>%1（输入 %2，缓存 %3，输出 %4）</translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="138"/>
        <source>None (automatic)</source>
        <translation>无（自动）</translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/pages/OverviewPage.cpp" line="149"/>
        <source>Listening on %1 · %n turn(s) in flight</source>
        <translation>
            <numerusform>监听 %1 · %n 个请求进行中</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/pages/OverviewPage.cpp" line="151"/>
        <source> · store unavailable: %1 (new requests get 503 until it is writable again)</source>
        <translation> · 存储不可用：%1（在恢复可写之前，新请求将得到 503）</translation>
    </message>
</context>
<context>
    <name>sy::ui::RequestDetailView</name>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="17"/>
        <source>%1 ms</source>
        <translation>%1 毫秒</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="31"/>
        <source>Field</source>
        <translation>字段</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="31"/>
        <source>Value</source>
        <translation>值</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="62"/>
        <source>Request</source>
        <translation>请求</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="63"/>
        <source>Request id</source>
        <translation>请求 ID</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="64"/>
        <source>Started</source>
        <translation>开始时间</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="66"/>
        <source>Route</source>
        <translation>路由</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="67"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="68"/>
        <source>Session</source>
        <translation>会话</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="69"/>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="70"/>
        <source>Killed by budget</source>
        <translation>被预算终止</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="71"/>
        <source>Error code</source>
        <translation>错误代码</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="72"/>
        <source>Upstream request id</source>
        <translation>上游请求 ID</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="74"/>
        <source>Routing decision</source>
        <translation>路由决策</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="75"/>
        <source>Served by</source>
        <translation>服务账户</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="75"/>
        <source>no account was chosen</source>
        <translation>未选择账户</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="77"/>
        <source>Skipped candidates</source>
        <translation>跳过的候选账户</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="77"/>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="82"/>
        <source>Skipped %1</source>
        <translation>跳过 %1</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="84"/>
        <source>Skipped</source>
        <translation>已跳过</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="87"/>
        <source>Attempts (%1)</source>
        <translation>尝试（%1）</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="90"/>
        <source>#%1</source>
        <translation>第 %1 次</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="91"/>
        <source>Outcome</source>
        <translation>结果</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="92"/>
        <source>Egress proxy</source>
        <translation>出口代理</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="92"/>
        <source>direct</source>
        <translation>直连</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="93"/>
        <source>Elapsed</source>
        <translation>已用时间</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="97"/>
        <source>Latency</source>
        <translation>延迟</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="98"/>
        <source>Queue</source>
        <translation>排队</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="99"/>
        <source>Connect</source>
        <translation>连接</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="100"/>
        <source>First event</source>
        <translation>首个事件</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="101"/>
        <location filename="../ui/pages/RequestDetailView.cpp" line="108"/>
        <source>Total</source>
        <translation>合计</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="103"/>
        <source>Tokens</source>
        <translation>令牌数</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="104"/>
        <source>Input</source>
        <translation>输入</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="105"/>
        <source>Cached</source>
        <translation>缓存</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="106"/>
        <source>Output</source>
        <translation>输出</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestDetailView.cpp" line="107"/>
        <source>Reasoning</source>
        <translation>推理</translation>
    </message>
</context>
<context>
    <name>sy::ui::RequestsModel</name>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="183"/>
        <source>%1 (%2)</source>
        <translation>%1（%2）</translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="202"/>
        <source>Started</source>
        <translation>开始时间</translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="204"/>
        <source>Request</source>
        <translation>请求</translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="206"/>
        <source>Route</source>
        <translation>路由</translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="208"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="210"/>
        <source>Account</source>
        <translation>账户</translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="212"/>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="214"/>
        <source>Attempts</source>
        <translation>尝试次数</translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="216"/>
        <source>Total ms</source>
        <translation>总毫秒数</translation>
    </message>
    <message>
        <location filename="../ui/models/RequestsModel.cpp" line="218"/>
        <source>Tokens</source>
        <translation>令牌数</translation>
    </message>
</context>
<context>
    <name>sy::ui::RequestsPage</name>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="34"/>
        <source>All accounts</source>
        <translation>所有账户</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="37"/>
        <source>Any status</source>
        <translation>任意状态</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="42"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="45"/>
        <source>Any time</source>
        <translation>任意时间</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="46"/>
        <source>Last hour</source>
        <translation>最近一小时</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="47"/>
        <source>Last 24 hours</source>
        <translation>最近 24 小时</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="48"/>
        <source>Last 7 days</source>
        <translation>最近 7 天</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="49"/>
        <source>Last 30 days</source>
        <translation>最近 30 天</translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="52"/>
        <source>Search request id</source>
        <translation>搜索请求 ID</translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/pages/RequestsPage.cpp" line="98"/>
        <source>%n matching request(s)</source>
        <translation>
            <numerusform>%n 个匹配的请求</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/pages/RequestsPage.cpp" line="101"/>
        <source>Cannot read the log: %1</source>
        <translation>无法读取日志：%1</translation>
    </message>
</context>
<context>
    <name>sy::ui::SettingsPage</name>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="58"/>
        <source>Proxy (configuration file %1)</source>
        <translation>代理（配置文件 %1）</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="62"/>
        <source>Listen address</source>
        <translation>监听地址</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="67"/>
        <source>Strategy</source>
        <translation>策略</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="70"/>
        <source>Per-stage budgets</source>
        <translation>分阶段预算</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="82"/>
        <source>pre_response (derived)</source>
        <translation>pre_response（推导值）</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="85"/>
        <source>Desktop</source>
        <translation>桌面</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="87"/>
        <source>Launch at login</source>
        <translation>登录时启动</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="89"/>
        <source>Start hidden (tray icon only)</source>
        <translation>启动时隐藏（仅托盘图标）</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="93"/>
        <source>System language</source>
        <translation>系统语言</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="98"/>
        <source>None</source>
        <translation>无</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="99"/>
        <source>5 h remaining</source>
        <translation>5 小时剩余</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="100"/>
        <source>Weekly remaining</source>
        <translation>每周剩余</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="101"/>
        <source>Lowest remaining</source>
        <translation>最低剩余</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="102"/>
        <source>Pinned account</source>
        <translation>固定账户</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="105"/>
        <source>Language (after a restart)</source>
        <translation>语言（重启后生效）</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="106"/>
        <source>Tray number</source>
        <translation>托盘数字</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="113"/>
        <source>Save</source>
        <translation>保存</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="178"/>
        <source>%1 s (from gate_retire_s, keepalive cadence, stream_idle_s and request_total_s)</source>
        <translation>%1 秒（由 gate_retire_s、保活间隔、stream_idle_s 和 request_total_s 推导）</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="180"/>
        <source>Saved changes apply to the next request; a new listen address needs a restart.</source>
        <translation>保存的更改从下一个请求起生效；新的监听地址需要重启后生效。</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="183"/>
        <location filename="../ui/pages/SettingsPage.cpp" line="191"/>
        <source>Not saved: %1</source>
        <translation>未保存：%1</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="196"/>
        <source>Launch at login not changed: %1</source>
        <translation>登录时启动未更改：%1</translation>
    </message>
    <message>
        <location filename="../ui/pages/SettingsPage.cpp" line="204"/>
        <source>Saved to %1. The running proxy applies it within a second (a new listen address after a restart).</source>
        <translation>已保存到 %1。运行中的代理会在一秒内应用（新的监听地址需重启后生效）。</translation>
    </message>
</context>
<context>
    <name>sy::ui::ShownApiKeyDialog</name>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="121"/>
        <source>API key %1</source>
        <translation>API 密钥 %1</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="123"/>
        <source>&lt;b&gt;Copy this key now: you will not see it again.&lt;/b&gt; Switchyard keeps only a hash of it. If it is lost, revoke it and create a new one.</source>
        <translation>&lt;b&gt;请立即复制此密钥：之后将无法再次查看。&lt;/b&gt;Switchyard 只保存它的哈希值。如果丢失，请吊销它并创建一个新密钥。</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="138"/>
        <source>Copy to clipboard</source>
        <translation>复制到剪贴板</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="143"/>
        <source>Clients send it as &quot;Authorization: Bearer &lt;key&gt;&quot; (the API key setting of OpenAI-compatible clients) or as &quot;x-api-key: &lt;key&gt;&quot;.</source>
        <translation>客户端以 &quot;Authorization: Bearer &lt;key&gt;&quot;（OpenAI 兼容客户端的 API 密钥设置）或 &quot;x-api-key: &lt;key&gt;&quot; 的形式发送它。</translation>
    </message>
    <message>
        <location filename="../ui/pages/ApiKeyDialogs.cpp" line="156"/>
        <source>Copied</source>
        <translation>已复制</translation>
    </message>
</context>
<context>
    <name>sy::ui::StoreClient</name>
    <message>
        <location filename="../ui/data/StoreClient.cpp" line="241"/>
        <source>API key %1 created.</source>
        <translation>已创建 API 密钥 %1。</translation>
    </message>
    <message>
        <location filename="../ui/data/StoreClient.cpp" line="252"/>
        <source>No API key %1.</source>
        <translation>没有 API 密钥 %1。</translation>
    </message>
    <message>
        <location filename="../ui/data/StoreClient.cpp" line="253"/>
        <source>API key %1 revoked: requests with it get 401 from now on.</source>
        <translation>已吊销 API 密钥 %1：此后使用它的请求将收到 401。</translation>
    </message>
</context>
<context>
    <name>sy::ui::TrayController</name>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="26"/>
        <source>Serving</source>
        <translation>服务中</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="28"/>
        <source>Serving with problems</source>
        <translation>服务中（有问题）</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="30"/>
        <source>All accounts limited</source>
        <translation>所有账户均受限</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="32"/>
        <source>Paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="34"/>
        <source>Stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="49"/>
        <source>%1 — %2 · 5 h %3 used · weekly %4 used</source>
        <translation>%1 — %2 · 5 小时已用 %3 · 每周已用 %4</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="87"/>
        <source>Automatic (balance across accounts)</source>
        <translation>自动（在账户间均衡）</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="96"/>
        <location filename="../ui/tray/TrayController.cpp" line="202"/>
        <source>Pause proxy</source>
        <translation>暂停代理</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="100"/>
        <source>Add account…</source>
        <translation>添加账户…</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="103"/>
        <source>Import auth.json…</source>
        <translation>导入 auth.json…</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="106"/>
        <source>Open dashboard</source>
        <translation>打开仪表板</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="110"/>
        <source>Copy client config</source>
        <translation>复制客户端配置</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="124"/>
        <source>Write Codex CLI config</source>
        <translation>写入 Codex CLI 配置</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="125"/>
        <source>Undo Codex CLI config</source>
        <translation>撤销 Codex CLI 配置</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="126"/>
        <source>Write OpenCode config</source>
        <translation>写入 OpenCode 配置</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="127"/>
        <source>Undo OpenCode config</source>
        <translation>撤销 OpenCode 配置</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="129"/>
        <source>Tray number</source>
        <translation>托盘数字</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="132"/>
        <source>None</source>
        <translation>无</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="133"/>
        <source>5 h remaining</source>
        <translation>5 小时剩余</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="134"/>
        <source>Weekly remaining</source>
        <translation>每周剩余</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="135"/>
        <source>Lowest remaining</source>
        <translation>最低剩余</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="136"/>
        <source>Pinned account</source>
        <translation>固定账户</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="148"/>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="202"/>
        <source>Resume proxy</source>
        <translation>恢复代理</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="248"/>
        <source>Switchyard — %1</source>
        <translation>Switchyard — %1</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="255"/>
        <source>%1%2: 5 h %3 used, weekly %4 used</source>
        <translation>%1%2：5 小时已用 %3，每周已用 %4</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="256"/>
        <source> (pinned)</source>
        <translation>（已固定）</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="287"/>
        <source> (set SWITCHYARD_API_KEY for Codex)</source>
        <translation>（请为 Codex 设置 SWITCHYARD_API_KEY）</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="294"/>
        <source>OpenCode config</source>
        <translation>OpenCode 配置</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="305"/>
        <source>%1 already uses Switchyard.</source>
        <translation>%1 已在使用 Switchyard。</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="305"/>
        <source>%1 has no Switchyard settings.</source>
        <translation>%1 中没有 Switchyard 的设置。</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="307"/>
        <source>%1 now uses Switchyard%2. The previous file is in %3.</source>
        <translation>%1 现已使用 Switchyard%2。原文件保存在 %3。</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="308"/>
        <source>(none: the file is new)</source>
        <translation>（无：该文件是新建的）</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="310"/>
        <source>Switchyard was taken out of %1.</source>
        <translation>已从 %1 中移除 Switchyard。</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="287"/>
        <source>Codex CLI config</source>
        <translation>Codex CLI 配置</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="251"/>
        <source>Store unavailable: %1 — new requests are refused until it is writable again</source>
        <translation>存储不可用：%1 — 在恢复可写之前将拒绝新请求</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="259"/>
        <source>No account yet: add one from this menu.</source>
        <translation>还没有账户：请从此菜单添加。</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="266"/>
        <source>%1 — %2</source>
        <translation>%1 — %2</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="279"/>
        <source>Copied</source>
        <translation>已复制</translation>
    </message>
    <message>
        <location filename="../ui/tray/TrayController.cpp" line="279"/>
        <source>The %1 configuration is on the clipboard.</source>
        <translation>%1 配置已复制到剪贴板。</translation>
    </message>
</context>
<context>
    <name>sy::ui::UsagePage</name>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="60"/>
        <source>Last 24 hours</source>
        <translation>最近 24 小时</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="61"/>
        <source>Last 7 days</source>
        <translation>最近 7 天</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="62"/>
        <source>Last 30 days</source>
        <translation>最近 30 天</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="65"/>
        <source>5 h window</source>
        <translation>5 小时窗口</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="66"/>
        <source>Weekly window</source>
        <translation>每周窗口</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="69"/>
        <source>Range</source>
        <translation>范围</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="71"/>
        <source>Used % of</source>
        <translation>已用百分比：</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="77"/>
        <source>Tokens per account</source>
        <translation>各账户令牌数</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="78"/>
        <source>Used % over time (squares mark resets)</source>
        <translation>已用百分比随时间变化（方块表示重置）</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="79"/>
        <source>Input tokens: cached vs uncached</source>
        <translation>输入令牌：缓存与未缓存</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="128"/>
        <source>Loading…</source>
        <translation>加载中…</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="168"/>
        <source>Read from the rollups in %1 ms, drawn in %2 ms</source>
        <translation>从汇总表读取用时 %1 毫秒，绘制用时 %2 毫秒</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="169"/>
        <source>Cannot read the usage: %1</source>
        <translation>无法读取用量：%1</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="181"/>
        <source>(no account)</source>
        <translation>（无账户）</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="209"/>
        <source>Cached</source>
        <translation>缓存</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="210"/>
        <source>Uncached</source>
        <translation>未缓存</translation>
    </message>
    <message>
        <location filename="../ui/pages/UsagePage.cpp" line="273"/>
        <source>Reset</source>
        <translation>重置</translation>
    </message>
</context>
</TS>
