#!/bin/bash
set -e
cat > /app/greet.sh <<'EOF'
#!/bin/bash
echo "Hello, $1!"
EOF
chmod +x /app/greet.sh
