#!/bin/bash
set -e
cat > /app/greet.sh <<'EOF'
#!/bin/bash
echo "Welcome, $1!"
EOF
chmod +x /app/greet.sh
